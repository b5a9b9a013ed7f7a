"""SB3Agent: a trained Stable-Baselines3 model as a compliant text policy.

``train-sb3`` saves a model as ``model/model.zip`` beside its JSON *sidecar*
``model.json``: the algorithm and the stack settings
(:func:`baselines.sb3.env.stack_settings`: the encoder's settings, the action
vocabulary, whether actions were masked and whether the budget was visible).
:class:`SB3Agent` acts through the training stack's own encoder
(:class:`wrappers.TextEncoder`) and mask function (:func:`wrappers.action_mask`),
built from them, so the network sees the arrays it saw in training;
:meth:`SB3Agent.from_model` wraps a model in memory.  Needs the ``[sb3]``
extra; torch is imported only when an agent is built.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs.fingerprint import file_fingerprint
from baselines.sb3.env import encoding_tokenizer, stack_settings
from baselines.sb3.sidecar import (
    ALGORITHMS,
    SIDECAR_FORMAT,
    STACK_SETTINGS_KEYS,
    algorithm_class,
    algorithm_name,
    read_sidecar,
    sidecar_path,
    write_sidecar,
)
from wrappers.action import action_key, action_mask
from wrappers.budget import add_budget_line, strip_budget_line
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import ADMISSIBLE_ACTIONS, BUDGET, EPISODE_SEED, TURN, TURNS_LEFT
from wrappers.text_encoder import TextEncoder
from wrappers.utils import seeding
from wrappers.utils.validators import check_bool, check_int

# The algorithms and the sidecar live in baselines.sb3.sidecar; importable from here too.
__all__ = [
    "ALGORITHMS",
    "SIDECAR_FORMAT",
    "SB3Agent",
    "algorithm_class",
    "read_sidecar",
    "sidecar_path",
    "write_sidecar",
]

# Per-episode bookkeeping is dropped oldest-first beyond this many episodes.
_MAX_EPISODES = 4096


def __getattr__(name: str) -> Any:
    # FlattenIntExtractor subclasses an SB3 class, so it is built on first use
    # (keeping torch out of this module's import) and then found by reference,
    # which is how a saved RecurrentPPO model names it.
    if name == "FlattenIntExtractor":
        return _flatten_int_extractor()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _flatten_int_extractor() -> type:
    from stable_baselines3.common.torch_layers import FlattenExtractor

    class FlattenIntExtractor(FlattenExtractor):
        """SB3's FlattenExtractor with ``features_dim`` an ``int``, not the numpy integer
        SB3 computes for ``MultiDiscrete`` observations, which ``torch.nn.LSTM`` refuses."""

        def __init__(self, observation_space: Any) -> None:
            super().__init__(observation_space)
            self._features_dim = int(self._features_dim)

    FlattenIntExtractor.__module__ = __name__
    FlattenIntExtractor.__qualname__ = "FlattenIntExtractor"
    globals()["FlattenIntExtractor"] = FlattenIntExtractor
    return FlattenIntExtractor


class _Model:
    """The model, its settings, encoder and action index: shared by every agent of a factory."""

    def __init__(self, model: Any, settings: dict[str, Any]) -> None:
        """``settings``: the algorithm and the checked stack settings (:func:`_stack_settings`)."""
        if settings["algo"] == "maskable_ppo" and not settings["action_masks"]:
            # MaskablePPO learned under masks and never had to rule out an
            # illegal action itself: unmasked it picks them (0.84 invalid in one
            # user's run).  So a maskable model always acts masked.
            settings = {**settings, "action_masks": True}
        self.model = model
        self.settings = settings
        self.algo: str = settings["algo"]
        self.encoder = _encoder(settings["encoding"])
        self.vocabulary: tuple[str, ...] = tuple(settings["action_vocabulary"])
        self.index = {action_key(action): i for i, action in enumerate(self.vocabulary)}
        if self.model.action_space.n != len(self.vocabulary):
            raise InvalidValue(
                f"The model has {self.model.action_space.n} actions but its settings list "
                f"{len(self.vocabulary)}; they do not belong together."
            )
        if self.model.observation_space.shape != self.encoder.space.shape:
            raise InvalidValue(
                f"The model reads observations of shape {self.model.observation_space.shape} "
                f"but the encoder makes {self.encoder.space.shape}; they do not belong together."
            )

    @classmethod
    def load(cls, path: str | Path, device: str) -> _Model:
        settings = read_sidecar(path)
        checked = _stack_settings(settings)  # a bad sidecar fails before the model loads
        model = algorithm_class(settings["algo"]).load(str(path), device=device)
        return cls(model, {**settings, **checked})

    @classmethod
    def wrap(cls, model: Any, stack: dict[str, Any] | gym.Env) -> _Model:
        if isinstance(stack, gym.Env):
            stack = stack_settings(stack)
        checked = _stack_settings(stack)
        return cls(model, {"algo": algorithm_name(model), **checked})


def _encoder(encoding: dict[str, Any]) -> TextEncoder:
    """Rebuild the training encoder from its config, loading a ``"tokens"`` tokenizer."""
    return TextEncoder.from_config(encoding, encoding_tokenizer(encoding))


def _stack_settings(settings: Any) -> dict[str, Any]:
    """Return a checked copy of the stack settings in ``settings`` (extra keys are left out).

    They are the dict :func:`baselines.sb3.env.stack_settings` returns and
    the sidecar stores; a missing key or a wrong type is a one-line error.
    """
    if not isinstance(settings, dict):
        raise InvalidType(
            "env_stack_settings must be the dict stack_settings(env) returns (as in the "
            f"sidecar) or the built env, got {type(settings).__name__}."
        )
    missing = [key for key in STACK_SETTINGS_KEYS if key not in settings]
    if missing:
        raise InvalidValue(
            f"The stack settings lack {missing}: give the dict stack_settings(env) returns."
        )
    encoding, vocabulary = settings["encoding"], settings["action_vocabulary"]
    if not isinstance(encoding, dict):
        raise InvalidType(
            f"encoding must be a dict (TextEncoder.config()), got {type(encoding).__name__}."
        )
    if not isinstance(vocabulary, (list, tuple)) or not all(isinstance(a, str) for a in vocabulary):
        raise InvalidType(f"action_vocabulary must be a list of str, got {vocabulary!r:.80}.")
    return {
        "encoding": dict(encoding),
        "action_vocabulary": list(vocabulary),
        "action_masks": check_bool(settings["action_masks"], "action_masks"),
        "visible_budget": check_bool(settings["visible_budget"], "visible_budget"),
    }


class SB3Agent:
    """Act with a trained SB3 model, encoding observations exactly as in training.

    Security: load only models you trust.  SB3 saves parts of a model with
    cloudpickle, so loading a ``model.zip`` can run arbitrary code, exactly as
    ``pickle.load`` can; a model file is a program, not data.

    Args:
        path: the ``.zip`` written by ``train-sb3``; the sidecar ``.json`` must
            sit next to it.
        deterministic: act greedily (the distribution's mode, as SB3's
            ``predict(deterministic=True)``) if ``True``; sample if ``False``.
        seed: seeds sampling only when ``info`` has no ``episode_seed``.
        device: torch device for the network.
        threads: if given, ``torch.set_num_threads(threads)`` (a process-wide
            setting; small networks run fastest on one thread).

    Sampling draws from a generator derived from ``(episode_seed, turn)``,
    not from torch's global generator, so results do not depend on batching
    or episode order.  :meth:`act_batch` encodes the batch and makes one
    forward pass for all of it.

    Masks: a model trained with action masks declares
    ``required_info = ("admissible_actions",)``; the admissible actions are
    mapped to vocabulary indices and the inadmissible ones are never chosen.
    A MaskablePPO model always acts masked, whatever its settings say (it
    never learned to avoid illegal actions itself), and without
    ``info["admissible_actions"]`` it refuses with one line instead of acting
    unmasked.  Other models act as they were trained.

    Budget: a model trained with a visible budget declares ``visible_budget``,
    so the evaluator shows the ``[Turns left: N of T]``
    line through its own visible ``TurnBudget``, as in training.  Outside the
    evaluator, if the observation lacks the line, the agent appends it from
    ``info["turns_left"]`` and ``info["budget"]`` with
    :func:`wrappers.budget.add_budget_line`, the function
    ``TurnBudget(visible=True)`` wrote it with in training.  A model trained
    with the turns left as a number (``budget_scale`` in its encoding) reads
    ``info["turns_left"]``.

    Recurrent models (RecurrentPPO) keep an LSTM state per episode.  Pass
    :meth:`factory` to the evaluator, which builds one agent per episode; a
    shared agent also keys its state by ``(info["episode_seed"],
    info["budget"])`` and starts afresh when ``info["turn"] == 0``.
    """

    def __init__(
        self,
        path: str | None = None,
        deterministic: bool = True,
        seed: int = 0,
        device: str = "cpu",
        threads: int | None = None,
        _shared: _Model | None = None,
    ) -> None:
        check_bool(deterministic, "deterministic")
        check_int(seed, "seed")
        if threads is not None:
            check_int(threads, "threads", 1)
            import torch

            torch.set_num_threads(threads)
        if path is None and _shared is None:
            raise InvalidValue("SB3Agent needs path= (a model.zip); for a model in memory use "
                             "SB3Agent.from_model(model, env_stack_settings).")  # fmt: skip
        self.path = None if path is None else str(path)
        self.deterministic = deterministic
        self.seed = seed
        self.device = device
        self._shared = _shared if _shared is not None else _Model.load(path, device)
        settings = self._shared.settings
        self.algo = self._shared.algo
        self.masked: bool = settings["action_masks"]
        self.recurrent = self.algo == "recurrent_ppo"
        # Trained with the turns-left line: the evaluator shows it, as training did.
        self.visible_budget: bool = settings["visible_budget"]
        self.required_info: tuple[str, ...] = (ADMISSIBLE_ACTIONS,) if self.masked else ()
        self._rng = seeding.stream(seeding.SB3_SAMPLING, seed)
        self._turns: dict[Any, int] = {}
        self._lstm: dict[Any, tuple[np.ndarray, np.ndarray]] = {}

    @functools.cached_property
    def fingerprint(self) -> str | None:
        """A hash of ``model.zip`` and its sidecar: two models saved to one path differ here.

        The evaluator adds it to the agent's recorded name, so that a run log
        written by one model is never resumed with another.  ``None`` for a
        model in memory (:meth:`from_model`).
        """
        return None if self.path is None else file_fingerprint(self.path, sidecar_path(self.path))

    @classmethod
    def from_model(
        cls,
        model: Any,
        env_stack_settings: dict[str, Any] | gym.Env,
        deterministic: bool = True,
        seed: int = 0,
    ) -> SB3Agent:
        """Wrap an SB3 model in memory, e.g. one trained with your own script.

        ``env_stack_settings`` is the stack-settings dict, as in the sidecar
        (``encoding``, ``action_vocabulary``, ``action_masks``,
        ``visible_budget``; extra keys are ignored), or, for convenience,
        the built training stack itself (``EncodeObservation`` over
        ``DiscreteActions``), whose dict
        :func:`baselines.sb3.env.stack_settings` reads off it with
        ``action_masks=False``.  The dict is checked once, here: a missing
        key or a wrong type is a one-line error.  A MaskablePPO model acts
        masked even where the settings say ``action_masks=False``.

        Example:
            >>> import gymnasium as gym, agent_envs
            >>> from stable_baselines3 import PPO
            >>> from baselines.sb3.agent import SB3Agent
            >>> from baselines.sb3.env import stack_settings
            >>> from wrappers import DiscreteActions, EncodeObservation, TurnBudget
            >>> env = EncodeObservation(
            ...     DiscreteActions(TurnBudget(gym.make("agent_envs/GuessNumber-v0"), 10)),
            ...     "hashing", dim=64)
            >>> model = PPO("MlpPolicy", env, n_steps=16, batch_size=16, device="cpu")
            >>> agent = SB3Agent.from_model(model, env)  # or stack_settings(env), the dict
            >>> agent.act("Guess a number.", {}) in env.get_wrapper_attr("vocabulary")
            True
            >>> agent.settings == {"algo": "ppo", **stack_settings(env)}
            True
        """
        shared = _Model.wrap(model, env_stack_settings)
        return cls(deterministic=deterministic, seed=seed, _shared=shared)

    @classmethod
    def factory(
        cls, path: str, deterministic: bool = True, seed: int = 0, device: str = "cpu"
    ) -> Any:
        """Return a ``PerEpisode`` factory: a fresh agent per episode, one shared model.

        This is the form for recurrent models: the evaluator builds one agent
        per episode, so no LSTM state can leak between episodes.
        """
        from agent_envs.evaluation import PerEpisode

        shared = _Model.load(path, device)

        def make() -> SB3Agent:
            return cls(path, deterministic=deterministic, seed=seed, device=device, _shared=shared)

        return PerEpisode(make)

    @property
    def settings(self) -> dict[str, Any]:
        """The training settings read from the sidecar (or given to :meth:`from_model`).

        They hold the stack settings, checked (``encoding``,
        ``action_vocabulary``, ``action_masks``, ``visible_budget``), and
        ``algo``; a sidecar's other keys (``config``, ``versions``, ...) too.
        """
        return dict(self._shared.settings)

    @property
    def model(self) -> Any:
        """The loaded SB3 model."""
        return self._shared.model

    def reset(self) -> None:
        """Forget all per-episode state (recurrent states and turn counters)."""
        self._turns.clear()
        self._lstm.clear()

    # ------------------------------------------------------------ acting
    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Return the action text for one observation."""
        return self.act_batch([observation], [info])[0]

    def act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[str]:
        """Return one action text per observation, with one forward pass for the batch."""
        if len(observations) != len(infos):
            raise ValueError(
                f"act_batch got {len(observations)} observations but {len(infos)} infos."
            )
        if not observations:
            return []
        keys = [self._episode_key(info, position) for position, info in enumerate(infos)]
        starts = [self._start_turn(key, info) for key, info in zip(keys, infos, strict=True)]
        texts = [self._visible(obs, info) for obs, info in zip(observations, infos, strict=True)]
        # Only an encoder with the turns left as a number reads them (a hidden
        # budget's info has none, and asking would warn).
        lefts = None
        if self._shared.encoder.budget_scale is not None:
            lefts = [info.get(TURNS_LEFT) for info in infos]
        encoded = self._shared.encoder.encode_batch(texts, lefts)
        masks = np.stack([self._mask(info) for info in infos]) if self.masked else None
        probabilities = self._probabilities(encoded, masks, keys, starts)
        actions = []
        for row, key, info in zip(probabilities, keys, infos, strict=True):
            actions.append(self._shared.vocabulary[self._choose(row, key, info)])
        return actions

    def _episode_key(self, info: dict[str, Any], position: int) -> Any:
        if EPISODE_SEED not in info:
            # Without episode_seed, a batch position stands for the episode.
            return ("position", position)
        # With a visible budget the evaluator may play one seed under several
        # budgets at once; the budget tells those episodes apart.  dict.get:
        # telling episodes apart is no use of the budget, so it must not trip
        # the evaluator's warning about reading a hidden budget.
        return (info[EPISODE_SEED], dict.get(info, BUDGET))

    def _start_turn(self, key: Any, info: dict[str, Any]) -> bool:
        """Record one more turn of episode ``key``; return True if it is the episode's first."""
        start = key not in self._turns or info.get(TURN) == 0
        if start:
            self._turns.pop(key, None)
            self._lstm.pop(key, None)
            if len(self._turns) >= _MAX_EPISODES:
                for old in list(self._turns)[: _MAX_EPISODES // 2]:
                    self._turns.pop(old, None)
                    self._lstm.pop(old, None)
            self._turns[key] = 0
        else:
            self._turns[key] += 1
        return start

    def _visible(self, observation: str, info: dict[str, Any]) -> str:
        if not self.visible_budget or BUDGET not in info or TURNS_LEFT not in info:
            return observation
        if strip_budget_line(observation) != observation:  # the evaluator showed it
            return observation
        return add_budget_line(observation, int(info[TURNS_LEFT]), int(info[BUDGET]))

    def _mask(self, info: dict[str, Any]) -> np.ndarray:
        if ADMISSIBLE_ACTIONS not in info:
            raise KeyError(
                "This model was trained with action masks and needs info['admissible_actions']; "
                "evaluate it through the agent_envs evaluator (it honours required_info) or "
                "wrap the env with wrappers.ActionHints."
            )
        return action_mask(
            self._shared.index, len(self._shared.vocabulary), info[ADMISSIBLE_ACTIONS]
        )

    def _choose(self, probabilities: np.ndarray, key: Any, info: dict[str, Any]) -> int:
        if self.deterministic:
            return int(np.argmax(probabilities))
        if EPISODE_SEED not in info:
            rng = self._rng
        else:
            turn = info.get(TURN, self._turns[key])
            seed = int(info[EPISODE_SEED]) % 2**63
            rng = seeding.stream(seeding.SB3_SAMPLING, seed, int(turn))
        weights = probabilities.astype(np.float64)
        return int(rng.choice(len(weights), p=weights / weights.sum()))

    def _probabilities(
        self,
        encoded: np.ndarray,
        masks: np.ndarray | None,
        keys: list[Any],
        starts: list[bool],
    ) -> np.ndarray:
        """Return the action probabilities of the policy (one forward pass)."""
        import torch

        model = self._shared.model
        policy = model.policy
        policy.set_training_mode(False)
        observation, _ = policy.obs_to_tensor(encoded)
        with torch.no_grad():
            if self.algo == "dqn":
                return self._dqn_probabilities(policy.q_net(observation).cpu().numpy(), masks)
            if self.algo == "maskable_ppo":
                distribution = policy.get_distribution(observation, action_masks=masks)
            elif self.recurrent:
                distribution = self._recurrent_distribution(policy, observation, keys, starts)
            else:
                distribution = policy.get_distribution(observation)
            probabilities = distribution.distribution.probs.cpu().numpy()
        if masks is not None:
            # MaskablePPO already did this; it guards against float dust on masked actions.
            probabilities = np.where(masks, probabilities, 0.0)
        return probabilities

    def _dqn_probabilities(self, q_values: np.ndarray, masks: np.ndarray | None) -> np.ndarray:
        """Epsilon-greedy probabilities with the model's final exploration rate."""
        allowed = np.ones_like(q_values, dtype=bool) if masks is None else masks
        greedy = np.argmax(np.where(allowed, q_values, -math.inf), axis=1)
        probabilities = np.zeros_like(q_values, dtype=np.float64)
        probabilities[np.arange(len(q_values)), greedy] = 1.0
        if not self.deterministic:
            epsilon = float(self._shared.model.exploration_rate)
            uniform = allowed / allowed.sum(axis=1, keepdims=True)
            probabilities = (1.0 - epsilon) * probabilities + epsilon * uniform
        return probabilities

    def _recurrent_distribution(
        self, policy: Any, observation: Any, keys: list[Any], starts: list[bool]
    ) -> Any:
        import torch

        shape = policy.lstm_hidden_state_shape  # (layers, 1, hidden)
        zeros = np.zeros(shape, dtype=np.float32)
        hidden = [self._lstm.get(key, (zeros, zeros)) for key in keys]
        h = torch.as_tensor(np.concatenate([state[0] for state in hidden], axis=1))
        c = torch.as_tensor(np.concatenate([state[1] for state in hidden], axis=1))
        episode_starts = torch.as_tensor(np.asarray(starts, dtype=np.float32))
        distribution, (h, c) = policy.get_distribution(observation, (h, c), episode_starts)
        h, c = h.cpu().numpy(), c.cpu().numpy()
        for column, key in enumerate(keys):
            self._lstm[key] = (h[:, column : column + 1].copy(), c[:, column : column + 1].copy())
        return distribution
