"""LLMPolicy: what every language-model policy here shares: prompt style, sampling, seeds.

:class:`~baselines.llm.agents.hf_agent.HFAgent`,
:class:`~baselines.llm.agents.llamacpp_agent.LlamaCppAgent` and
:class:`~baselines.llm.agents.openai_agent.OpenAIChatAgent` act, and the GRPO rollout
(:class:`~baselines.llm.training.rollout.EpisodeRollout`) trains, with the same prompt
arguments (:class:`~baselines.llm.prompting.few_shot.PromptStyle`), the same sampling
settings (``temperature``, ``top_p``, ``max_new_tokens``) and the same seed
for each reply: a hash of the policy's ``seed``, the episode seed, the turn
and the prompt (:func:`wrappers.utils.seeding.sampling_seed`).  This base checks and
builds them once, so that a model is evaluated as it was trained.

Each of them holds its :class:`LLMPolicy` (:class:`PolicyHolder` passes its
settings through); the agents share the rest of their surface in
:class:`LLMAgent`: ``act``, ``act_batch`` and the name a run records.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from baselines.llm.prompting.few_shot import PromptStyle
from baselines.llm.prompting.messages import turn_of
from baselines.llm.prompting.replies import FORMAT_PROMPT
from wrappers.protocol import EPISODE_SEED
from wrappers.utils import seeding
from wrappers.utils.validators import check_int, check_number

__all__ = [
    "POLICY_SETTINGS",
    "LLMAgent",
    "LLMPolicy",
    "PolicyHolder",
    "check_sampling",
    "check_temperature",
]


#: The keywords of :class:`LLMPolicy`, which every LLM agent passes through to it.
POLICY_SETTINGS = (
    "system_prompt",
    "few_shot",
    "reply_format",
    "env_id",
    "temperature",
    "top_p",
    "max_new_tokens",
    "seed",
)


def check_temperature(temperature: float, greedy: bool = True) -> None:
    """Refuse a temperature out of range: the one check of every policy's temperature.

    ``greedy``: whether 0 (greedy decoding) is allowed; GRPO samples, so
    training's settings refuse it.
    """
    if greedy:
        check_number(temperature, "temperature (0 means greedy)", 0.0)
    else:
        check_number(temperature, "temperature", 0.0, open_low=True)


def check_sampling(
    temperature: float, top_p: float, max_new_tokens: int, name: str = "max_new_tokens"
) -> None:
    """Raise a clear error for out-of-range sampling arguments."""
    check_temperature(temperature)
    check_number(top_p, "top_p", 0.0, 1.0, open_low=True)
    check_int(max_new_tokens, name, 1)


class LLMPolicy:
    """The prompt style, sampling settings and seed derivation of a language-model policy.

    Args:
        system_prompt: put first in every prompt (``None`` for none); a system
            message from ``wrappers.ChatHistory`` takes its place.  By default
            the reply format's own (:data:`~baselines.llm.prompting.replies.SYSTEM_PROMPTS`).
        few_shot: put that many episodes played by the env's oracle before
            the real one, as earlier turns of the chat
            (:mod:`baselines.llm.prompting.few_shot`).  0 by default.
        reply_format: ``"action"`` (the bare action; decoding stops at the end
            of the first line) or ``"think"`` (free text, then an
            ``Action: ...`` line, where decoding stops).  By default
            ``"action"`` with ``few_shot`` and ``"think"`` without.
        env_id: the env the few-shot examples come from; by default the
            evaluator's ``info["registered_id"]``.
        temperature: ``0`` for greedy decoding, else the sampling temperature.
            The default 1.0 with ``top_p`` 1.0 samples the model's own
            distribution, the policy that RL trains and that Pass@K is an
            estimate for; use 0 for one deterministic attempt.
        top_p: nucleus sampling threshold in ``(0, 1]``.
        max_new_tokens: the most tokens generated per turn.
        seed: the policy's seed, mixed into every reply's sampling seed.

    Attributes:
        style: the :class:`~baselines.llm.prompting.few_shot.PromptStyle`.
        system_prompt: the system prompt the style resolved (``None``: none).
        required_info: the info keys the evaluator must provide (the env's
            id, for few-shot examples).
    """

    def __init__(
        self,
        *,
        system_prompt: str | None = FORMAT_PROMPT,
        few_shot: int = 0,
        reply_format: str | None = None,
        env_id: str | None = None,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int = 256,
        seed: int = 0,
    ) -> None:
        check_sampling(temperature, top_p, max_new_tokens)
        self.seed = check_int(seed, "seed")
        self.style = PromptStyle(few_shot, reply_format, system_prompt, env_id)
        self.required_info = self.style.required_info
        self.system_prompt = self.style.system_prompt
        self.temperature, self.top_p = float(temperature), float(top_p)
        self.max_new_tokens = int(max_new_tokens)
        # Outside the evaluator, which gives every attempt its episode seed.
        self._episode_rng = np.random.default_rng(seed)

    def reply_seed(self, episode_seed: int | None, turn: int, prompt: Sequence[int] | str) -> int:
        """Return the sampling seed of the reply at ``turn`` of an episode to ``prompt``.

        ``prompt`` is the prompt's token ids, or its text (a chat server's
        messages as JSON); ``episode_seed`` ``None`` counts as one value of its own.
        """
        key = prompt if isinstance(prompt, str) else ",".join(map(str, prompt))
        return seeding.sampling_seed(self.seed, episode_seed, turn, key)

    def sample_seed(self, info: Mapping[str, Any], prompt: Sequence[int]) -> int:
        """Return the sampling seed of one turn's reply, its episode seed read from ``info``.

        Without ``info["episode_seed"]`` (outside the evaluator) the episode
        seed is drawn from the policy's own generator, seeded with ``seed``.
        """
        episode_seed = info.get(EPISODE_SEED)
        if episode_seed is None:
            episode_seed = int(self._episode_rng.integers(2**62))
        return self.reply_seed(episode_seed, turn_of(info), prompt)


def _from_policy(setting: str, doc: str) -> property:
    """Return a read-only property that reads ``setting`` off the holder's policy."""
    return property(lambda holder: getattr(holder.policy, setting), doc=doc)


class PolicyHolder:
    """Passes the settings of the :class:`LLMPolicy` it holds (:attr:`policy`) through.

    ``holder.temperature`` is ``holder.policy.temperature``: an agent or a
    rollout is read as the policy it acts or trains with.
    """

    policy: LLMPolicy
    style = _from_policy("style", "The policy's prompt style (a ``PromptStyle``).")
    system_prompt = _from_policy("system_prompt", "The system prompt (``None``: none).")
    temperature = _from_policy("temperature", "The sampling temperature (``0``: greedy).")
    top_p = _from_policy("top_p", "The nucleus sampling threshold.")
    max_new_tokens = _from_policy("max_new_tokens", "The most tokens of one reply.")
    seed = _from_policy("seed", "The policy's seed, mixed into every reply's sampling seed.")


class LLMAgent(PolicyHolder):
    """What the language-model agents share: their policy, acting in batches, their name.

    An agent passes its prompt and sampling keywords (:data:`POLICY_SETTINGS`)
    through to the :class:`LLMPolicy` it holds, implements :meth:`_act_batch`,
    sets :attr:`name` and says which of its own settings its name shows.

    Attributes:
        policy: the :class:`LLMPolicy`: prompt style, sampling settings, seeds.
        required_info: the info keys the evaluator must provide (the
            policy's, and the agent's own).
        name: the model's name, as the agent's ``repr`` shows it.
    """

    visible_budget = False
    #: The agent's own settings that its ``repr`` shows, before the seed and after it.
    shown_before_seed: tuple[str, ...] = ()
    shown_after_seed: tuple[str, ...] = ()
    name: str

    def __init__(self, **settings: Any) -> None:
        for keyword in settings:
            if keyword not in POLICY_SETTINGS:
                raise TypeError(
                    f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                    f"{keyword!r}"
                )
        self.policy = LLMPolicy(**settings)
        self.required_info = self.policy.required_info

    def check_tasks(self, env: Any, task_ids: Any) -> None:
        """Refuse, before a run, tasks that are a few-shot example's instance (``ValueError``)."""
        self.style.check_tasks(env, task_ids)

    def write_reply(self, action: str) -> str:
        """Return ``action`` written as this agent's reply, as its few-shot examples show it.

        The :class:`agent_envs.protocol.ReplyWriter` hook: step quality shows
        the agent a reference trajectory in its own format.
        """
        return self.style.write_reply(action)

    def __repr__(self) -> str:
        """The agent's class, model and settings: the name a run log records and resumes by."""
        shown = {
            "model": self.name,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_new_tokens": self.max_new_tokens,
            **{setting: getattr(self, setting) for setting in self.shown_before_seed},
            "seed": self.seed,
            **{setting: getattr(self, setting) for setting in self.shown_after_seed},
        }
        settings = ", ".join(f"{setting}={value!r}" for setting, value in shown.items())
        return f"{type(self).__name__}({settings}, {self.style!r})"

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        """Return the action for one episode (a batch of one)."""
        return self.act_batch([observation], [info])[0]

    def act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[Any]:
        """Return one action per episode (an ``AgentAction``: the reply is its ``raw``)."""
        if len(observations) != len(infos):
            raise ValueError(
                f"act_batch got {len(observations)} observations but {len(infos)} infos."
            )
        return self._act_batch(observations, infos)

    def _act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[Any]:
        raise NotImplementedError
