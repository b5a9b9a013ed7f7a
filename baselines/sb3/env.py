"""The env stack that :mod:`baselines.sb3.train` trains on, and the settings an agent acts by.

Inside out: ``gym.make(config.env_id)`` -> ``TaskPool`` (the training task
ids) -> ``TurnBudget`` or ``BudgetMix`` -> ``ProcessReward`` (if
``process_reward`` is set) -> ``TruncationIsTerminal`` (if
``truncation_terminal``) -> ``DiscreteActions`` -> ``EncodeObservation``.
:func:`make_env` builds one such env with
:func:`agent_envs.env_stack.make_stack`; the vector env that training runs on
holds ``n_envs`` of them, each inside SB3's ``Monitor``.

:func:`stack_settings` reads off a built stack what a trained policy needs to
see and act as it did in training, as the dict the sidecar stores: the
encoder's settings, the action vocabulary, whether actions were masked,
whether the budget line was visible.  :class:`baselines.SB3Agent` acts through
the same :class:`wrappers.TextEncoder` and :func:`wrappers.action_mask` that
the stack uses, built from these settings.

Stable-Baselines3 is imported only when the vector env is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agent_envs.arguments import flag, int_arg, int_list, number_arg
from agent_envs.core import MAX_TASK_ID
from agent_envs.env_stack import BudgetRegime, StackOptions, make_stack
from wrappers.budget import find_budget
from wrappers.episode import TaskPool
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import SUCCESS
from wrappers.utils.validators import (
    MAX_COUNT,
    MAX_SEED,
    check_at_most,
    check_bool,
    check_int,
    check_number,
    check_probability,
)

__all__ = [
    "TaskPool",
    "TrainConfig",
    "encoding_tokenizer",
    "load_tokenizer",
    "make_env",
    "stack_settings",
    "vec_envs",
]


# ---------------------------------------------------------------------- settings
#: The most env steps ``--timesteps`` takes (a billion: days of training on a CPU).
MAX_TIMESTEPS = 10**9
#: The most parallel envs (``--n-envs``).  Design decision: each is a whole env
#: stack (with ``--vec subproc`` a process); a million failed with a MemoryError
#: after minutes, and no CPU here runs more than a few hundred usefully.
MAX_ENVS = 1024


@dataclass
class TrainConfig:
    """Everything that decides a training run; saved verbatim in the sidecar.

    ``budget_mix``, when given, replaces ``budget`` (BudgetMix instead of
    TurnBudget).  Tasks: ``train_tasks`` lists the task ids training draws
    from; ``None`` draws a fresh task every episode from ids ``train_first``
    upward (so ids below ``train_first`` stay held out).

    ``truncation_terminal`` ends an episode whose budget ran out as
    terminated, so the learner does not bootstrap past the budget.
    ``budget_feature`` adds the turns left, as a number scaled by the
    largest training budget, to the observation vector; it needs
    ``visible_budget`` too, because evaluators pass the turns left only to
    agents that see the budget (the encoder drops the text line itself).  ``bc_episodes > 0``
    warm-starts the policy by behaviour cloning from that many episodes of
    ``NoisyOracleAgent(bc_epsilon)`` (see :mod:`baselines.sb3.bc`);
    ``init_from`` starts instead from the weights of a saved model (trained
    on the same observation and action spaces).  ``budget_scale`` fixes the
    scale of the budget feature (default: the largest training budget), so
    that runs under different budgets share one observation space.

    A field with ``flag`` metadata is also ``train-sb3``'s flag of that name
    (:func:`agent_envs.arguments.add_config_arguments`), written once here.

    Defaults: each setting left at ``None`` (``timesteps``, ``budget``,
    ``train_first``, ``bc_episodes``, ``bc_epochs``, ``net_arch``,
    ``encoding``, ``algo_kwargs``) is filled from the tuned entry of
    ``env_id`` and ``algo`` in :mod:`baselines.sb3.defaults`, or from its
    generic fallback; ``tuned`` names those taken from the tuned entry.  So
    ``TrainConfig("agent_envs/FrozenLake-v0")`` trains with the tuned
    settings, and a setting you give is used as given.  ``encoding="compact"``
    is the env's compact view.
    """

    env_id: str
    algo: str = "maskable_ppo"
    timesteps: int | None = field(
        default=None, metadata=flag("env steps (default: tuned)", type=int_arg(1, MAX_TIMESTEPS))
    )
    budget: int | None = None
    budget_mix: tuple[int, ...] | None = None
    weights: tuple[float, ...] | None = None
    visible_budget: bool = False
    budget_feature: bool = field(
        default=False,
        metadata=flag("add the turns left as a number to the input (implies --visible-budget)"),
    )
    truncation_terminal: bool = field(
        default=False,
        metadata=flag("treat running out of turns as terminal (no bootstrap at truncation)"),
    )
    process_reward: float | None = field(
        default=None, metadata=flag("add ProcessReward (coef)", type=number_arg(), metavar="COEF")
    )
    gamma: float = field(
        default=0.99, metadata=flag("discount (default 0.99)", type=number_arg(0, 1, open_low=True))
    )
    seed: int = 0
    n_envs: int = field(
        default=8, metadata=flag("parallel envs (default 8)", type=int_arg(1, MAX_ENVS))
    )
    vec: str = field(
        default="dummy", metadata=flag("vector env (default dummy)", choices=("dummy", "subproc"))
    )
    train_tasks: tuple[int, ...] | None = None
    train_first: int | None = field(
        default=None,
        metadata=flag(
            "first training task id (default: tuned); without --train-tasks a fresh task every "
            "episode from this id up (keep the evaluation ids below it)",
            type=int_arg(0),
        ),
    )
    bc_episodes: int | None = field(
        default=None,
        metadata=flag(
            "behaviour-cloning warm start: noisy-oracle demonstration episodes (0: none; "
            "default: tuned)",
            type=int_arg(0),
        ),
    )
    bc_epsilon: float = field(
        default=0.2, metadata=flag("the demonstrations' noise (default 0.2)", type=number_arg(0, 1))
    )
    bc_epochs: int | None = field(
        default=None,
        metadata=flag("behaviour cloning's supervised epochs (default: tuned)", type=int_arg(1)),
    )
    init_from: str | None = None
    budget_scale: int | None = None
    net_arch: tuple[int, ...] | None = field(
        default=None, metadata=flag("hidden layers (default: tuned)", type=int_list(1))
    )
    encoding: dict[str, Any] | str | None = None
    algo_kwargs: dict[str, Any] | None = None
    threads: int = field(default=1, metadata=flag("torch threads (default 1)", type=int_arg(1)))
    tuned: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from baselines.sb3.defaults import resolve

        self._check_names()
        self.tuned = tuple(dict.fromkeys((*self.tuned, *resolve(self))))
        self._check_values()
        if self.budget_feature and not self.visible_budget:
            raise InvalidValue(
                "budget_feature needs visible_budget=True: evaluators give the turns left only "
                "to agents that see the budget (the encoder drops the text line itself)."
            )

    def _check_names(self) -> None:
        """Refuse an ``env_id`` or ``algo`` that the tuned table cannot be looked up by."""
        from baselines.sb3.sidecar import ALGORITHMS

        if not isinstance(self.env_id, str) or not self.env_id.strip():
            raise InvalidValue(f"env_id must be a registered id, got {self.env_id!r:.80}.")
        if self.algo not in ALGORITHMS:
            raise InvalidValue(f"algo must be one of {sorted(ALGORITHMS)}, got {self.algo!r:.80}.")

    def _check_values(self) -> None:
        """Refuse, in one line, a setting the flags would refuse (``TrainConfig`` in Python).

        The flags check their values as they parse them; a config built in
        Python took ``timesteps=-5``, ``gamma=2.0`` or ``seed=True`` as they
        were, and training failed deep inside SB3, or ran on them.
        """
        # 0 builds the model (and clones behaviour) without RL steps, as tests do.
        check_at_most(check_int(self.timesteps, "timesteps", 0), "timesteps", MAX_TIMESTEPS)
        self.budget_regime()  # checks budget, budget_mix, weights and visible_budget
        for name in ("budget_feature", "truncation_terminal"):
            check_bool(getattr(self, name), name)
        if self.process_reward is not None:
            check_number(self.process_reward, "process_reward", 0.0)
        check_number(self.gamma, "gamma", 0.0, 1.0, open_low=True)
        check_at_most(check_int(self.seed, "seed", 0), "seed", MAX_SEED)
        check_int(self.n_envs, "n_envs", 1, MAX_ENVS)
        for name, low in (("bc_episodes", 0), ("bc_epochs", 1), ("threads", 1)):
            check_at_most(check_int(getattr(self, name), name, low), name, MAX_COUNT)
        check_int(self.train_first, "train_first", 0, MAX_TASK_ID - 1)
        check_probability(self.bc_epsilon, "bc_epsilon")
        if self.vec not in ("dummy", "subproc"):
            raise InvalidValue(f"vec must be 'dummy' or 'subproc', got {self.vec!r:.80}.")
        if self.budget_scale is not None:
            check_int(self.budget_scale, "budget_scale", 1)
        if self.net_arch is not None:
            if isinstance(self.net_arch, (str, bytes)) or not isinstance(self.net_arch, Sequence):
                raise InvalidType(
                    f"net_arch must be a sequence of ints, got {self.net_arch!r:.80}."
                )
            for width in self.net_arch:
                check_at_most(check_int(width, "every net_arch width", 1), "net_arch", MAX_COUNT)

    def regime(self) -> str:
        """Return a short name of the budget regime, e.g. ``mix5-10-20+pr0.1``."""
        name = (
            f"T{self.budget}"
            if self.budget_mix is None
            else "mix" + "-".join(str(budget) for budget in self.budget_mix)
        )
        if self.budget_feature:
            name += "+left"
        elif self.visible_budget:
            name += "+visible"
        if self.process_reward is not None:
            name += f"+pr{self.process_reward:g}"
        if self.bc_episodes:
            name += "+bc"
        return name

    def budget_regime(self) -> BudgetRegime:
        """Return the training budgets as one :class:`~agent_envs.env_stack.BudgetRegime`."""
        if self.budget_mix is None:
            return BudgetRegime.fixed(self.budget, self.visible_budget)
        return BudgetRegime.mixed(self.budget_mix, self.weights, self.visible_budget)

    def training_budgets(self) -> tuple[int, ...]:
        """Return the budgets seen in training."""
        return self.budget_mix if self.budget_mix is not None else (self.budget,)

    def encoder_arguments(self) -> dict[str, Any]:
        """Return the :class:`wrappers.TextEncoder` arguments, with the budget scale if any.

        A ``"tokens"`` encoding names its tokenizer; here it is loaded
        (:func:`load_tokenizer`), as the encoder takes the object.
        """
        arguments = dict(self.encoding)
        if "ngram_range" in arguments:
            arguments["ngram_range"] = tuple(arguments["ngram_range"])
        tokenizer = encoding_tokenizer(arguments)
        if tokenizer is not None:
            arguments["tokenizer"] = tokenizer
        if self.budget_feature:
            arguments["budget_scale"] = self.budget_scale or max(self.training_budgets())
        return arguments

    def task_ids(self) -> Sequence[int] | None:
        """Return the task ids training draws from (``None``: any id)."""
        if self.train_tasks is not None:
            return self.train_tasks
        return range(self.train_first, MAX_TASK_ID) if self.train_first else None


def encoding_tokenizer(encoding: dict[str, Any]) -> Any:
    """Return the loaded tokenizer a ``"tokens"`` encoding names, else ``None``."""
    name = encoding.get("tokenizer")
    named = encoding.get("mode") == "tokens" and isinstance(name, str)
    return load_tokenizer(name) if named else None


def load_tokenizer(name: str) -> Any:
    """Return the tokenizer of a ``"tokens"`` encoding, from local files only.

    :class:`wrappers.TextEncoder` takes the loaded object (the bottom layer
    imports no transformers) and saves its name in its config; this is where
    the SB3 baselines load it, with ``AutoTokenizer.from_pretrained(name,
    local_files_only=True)``: ``name`` is a local folder, or a hub name already
    in the local Hugging Face cache.  Nothing downloads.

    Raises:
        InvalidValue: no tokenizer is found there.
    """
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except OSError:
        raise InvalidValue(
            f"No tokenizer at {name!r} on this machine (nothing downloads): give a local "
            "folder that holds one, e.g. a model saved with save_pretrained."
        ) from None


def stack_settings(env: gym.Env, action_masks: bool = False) -> dict[str, Any]:
    """Return how a policy sees and acts on a built stack: what :class:`baselines.SB3Agent` needs.

    The stack is ``EncodeObservation`` over ``DiscreteActions`` (as
    :func:`make_env` builds).  The dict is the one the sidecar stores:
    ``encoding`` (the :class:`wrappers.TextEncoder` settings, its
    ``config()``), ``action_vocabulary`` (the actions, in the policy's index
    order), ``action_masks`` (whether the policy was trained with action
    masks: say so, it cannot be read off the env) and ``visible_budget``
    (whether observations end with the budget line).
    """
    try:
        encoding = env.get_wrapper_attr("encoder_config")()
        vocabulary = list(env.get_wrapper_attr("vocabulary"))
    except AttributeError:
        raise ValueError(
            "stack_settings needs a stack with EncodeObservation over DiscreteActions "
            "(as baselines.sb3.env.make_env builds)."
        ) from None
    budget = find_budget(env)
    return {
        "encoding": encoding,
        "action_vocabulary": vocabulary,
        "action_masks": action_masks,
        "visible_budget": budget is not None and budget.visible,
    }


# --------------------------------------------------------------------- env stack
def make_env(config: TrainConfig) -> gym.Env:
    """Build one training env: the text env under the budget regime, discrete and encoded."""
    options = StackOptions(
        task_ids=config.task_ids(),
        process_reward=config.process_reward,
        gamma=config.gamma,
        truncation_terminal=config.truncation_terminal,
        discrete=True,
        encoding=config.encoder_arguments(),
    )
    return make_stack(config.env_id, config.budget_regime(), options)


def vec_envs(config: TrainConfig) -> Any:
    """Return SB3's vector env of ``config.n_envs`` training stacks, seeded from ``config.seed``."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    # Observations are numeric after EncodeObservation, so SubprocVecEnv is safe
    # here (Gymnasium's shared-memory AsyncVectorEnv would corrupt Text spaces).
    vec_cls = SubprocVecEnv if config.vec == "subproc" else DummyVecEnv
    return make_vec_env(
        _EnvFactory(config),
        n_envs=config.n_envs,
        seed=config.seed,
        vec_env_cls=vec_cls,
        # Success, not reward, is the measure: shaped rewards make the return ambiguous.
        monitor_kwargs={"info_keywords": (SUCCESS,)},
    )


class _EnvFactory:
    """A picklable ``() -> env`` for SubprocVecEnv (a closure would pickle too, this is plainer)."""

    def __init__(self, config: TrainConfig) -> None:
        self.config = config

    def __call__(self) -> gym.Env:
        import agent_envs  # noqa: F401  (registers the ids in a fresh subprocess)

        return make_env(self.config)
