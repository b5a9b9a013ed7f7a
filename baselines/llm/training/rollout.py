"""Whole multi-turn episodes of any registered env as GRPO samples for TRL.

:class:`EpisodeRollout` is a ``rollout_func`` for ``trl.GRPOTrainer``.  Each
dataset prompt names one task (:func:`task_prompt`, read back by
:func:`task_of`); TRL hands every prompt over K times in a row
(``num_generations``), and the K copies are K attempts at that task, with K
distinct episode seeds derived as the evaluator derives them
(:func:`wrappers.utils.seeding.episode_seed`).

One episode is one sample.  Its prompt is the first turn's prompt; its
completion is everything after it: the model's reply of turn 1, the env's
answer (rendered by the chat template as the next user message), the reply of
turn 2, and so on, ending with the last reply.  ``env_mask`` is 1 on the
model's tokens and 0 on the env's, so the loss never trains on env text.

Token in, token out.  The sampled tokens are the truth: an episode's
sequence is its first prompt (the task, rendered by
:class:`baselines.llm.prompting.prompt_encoder.PromptEncoder` from ``info["messages"]`` of a
``ChatHistory(record="raw")`` stack, :data:`TRAINING_STACK`), then every reply
exactly as sampled, each followed by the chat template's delta for the env's
answer (:class:`baselines.llm.prompting.chat_tokens.ChatTokens`: the end of the
assistant turn, the user message, the start of the next assistant turn),
tokenised once.  Nothing is re-tokenised, so a non-canonical split or a
special token inside a reply changes nothing.
:class:`~baselines.llm.agents.hf_agent.HFAgent` builds its prompts the same way
(:class:`baselines.llm.prompting.chat_tokens.TokenHistory`), so ``evaluate`` replays
the prompts of training.  An episode ends with one of :data:`END_REASONS`:
``"success"``, ``"budget"`` (out of turns), ``"failure"`` (the env ended it
without success) or ``"context"`` (the next prompt would not leave
``max_new_tokens`` of room in the model's context; HFAgent would drop old
exchanges there, a training sequence cannot).

Generation (:mod:`baselines.llm.agents.generation`) is one batched decode per turn
for all live episodes of the step, each episode's keys and values kept from
one turn to the next (:mod:`baselines.llm.agents.prefix_cache`; ``HFGenerator(...,
prefix_cache=False)`` calls ``model.generate`` instead).  Sampling is
``HFAgent``'s seeded Gumbel-max sampler, so what an episode samples does not
depend on the batch it shares; each sampled token's log-probability is
recorded.  With ``use_vllm=True`` generation goes through
``trainer.vllm_generation``, written against TRL 1.16 but untested here (no GPU).

The budgets of training episodes are a :class:`~agent_envs.env_stack.BudgetRegime`;
the rewards are in :mod:`baselines.llm.training.rewards`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agent_envs.env_stack import BudgetRegime, StackOptions, make_stack
from baselines.llm.agents.generation import (
    Generate,
    Generation,
    HFGenerator,
    VLLMGenerator,
    context_length,
    eos_token_ids,
    reply_decoder,
)
from baselines.llm.agents.policy import LLMPolicy, PolicyHolder
from baselines.llm.prompting.chat_tokens import ChatTokens
from baselines.llm.prompting.prompt_encoder import PromptEncoder
from baselines.llm.prompting.replies import ReplyStop, to_agent_action
from baselines.llm.training.train_config import RolloutSettings
from wrappers.protocol import BUDGET, EPISODE_SEED, SUCCESS, TASK_ID, VALID_ACTION
from wrappers.utils import seeding

__all__ = [
    "END_REASONS",
    "Episode",
    "EpisodeRollout",
    "play_episodes",
    "start_episode",
    "summarize",
    "task_of",
    "task_prompt",
]

#: Why an episode ended: solved (``"success"``), out of turns (``"budget"``), ended by
#: the env without success, or cut by the context.
END_REASONS = (SUCCESS, BUDGET, "failure", "context")
#: What a GRPO episode's stack adds to the budget: the dialogue, each reply kept whole,
#: so that each prompt extends the tokens generated; evaluation plays the same stack.
TRAINING_STACK = StackOptions(history=True, record="raw")

# Per-episode fields returned to TRL (and so to the reward functions).
_FIELDS = (
    TASK_ID,
    EPISODE_SEED,
    SUCCESS,
    "turns",
    BUDGET,
    "first_success_turn",
    "invalid_actions",
    "end_reason",
    "process_return",
)

#: TRL's ``GRPOTrainer`` hands a rollout dataset prompts, not env states: each
#: prompt names one task, which the rollout reads back (:func:`task_of`).
_TASK_PREFIX = "agent_envs task "


def task_prompt(task_id: int) -> str:
    """Return the dataset prompt that names ``task_id`` (the rollout reads it back).

    >>> task_of(task_prompt(17))
    17
    """
    return f"{_TASK_PREFIX}{int(task_id)}"


def task_of(prompt: Any) -> int:
    """Return the task id a dataset prompt names; ``ValueError`` for any other prompt."""
    if isinstance(prompt, str) and prompt.startswith(_TASK_PREFIX):
        number = prompt[len(_TASK_PREFIX) :]
        if number.isdigit():
            return int(number)
    raise ValueError(
        f"EpisodeRollout needs prompts made by task_prompt(task_id), such as "
        f"{task_prompt(0)!r}; got {prompt!r:.80}."
    )


@dataclass
class Episode:
    """One training episode: its env, its token sequence and its outcome."""

    task_id: int
    episode_seed: int
    budget: int
    env: gym.Env | None = field(default=None, repr=False)
    observation: str = field(default="", repr=False)
    info: dict[str, Any] = field(default_factory=dict, repr=False)
    prompt_ids: list[int] = field(default_factory=list, repr=False)
    completion_ids: list[int] = field(default_factory=list, repr=False)
    env_mask: list[int] = field(default_factory=list, repr=False)
    logprobs: list[float] = field(default_factory=list, repr=False)
    #: Every turn's prompt, as the model saw it (kept only when asked).
    turn_prompts: list[list[int]] | None = field(default=None, repr=False)
    success: bool = False
    turns: int = 0
    first_success_turn: int | None = None
    invalid_actions: int = 0
    end_reason: str | None = None
    process_return: float = 0.0
    #: ``oracle_turns()`` at reset, when progress is tracked (``None`` otherwise).
    start_distance: int | None = field(default=None, repr=False)

    @property
    def sequence(self) -> list[int]:
        """The prompt and completion so far: what the model reads next."""
        return self.prompt_ids + self.completion_ids

    def fields(self) -> dict[str, Any]:
        """Return the per-episode fields passed to TRL's reward functions."""
        return {name: getattr(self, name) for name in _FIELDS}


def play_episodes(
    episodes: list[Episode],
    chat: ChatTokens,
    generate: Generate,
    decode: Callable[[list[int]], str],
    keep_prompts: bool = False,
) -> list[Episode]:
    """Play ``episodes`` (envs reset, first prompts set) to the end, one generate call a turn.

    ``decode`` turns a reply's tokens (without the end token) into its text;
    with ``keep_prompts`` each episode's ``turn_prompts`` records every turn's
    prompt.  Returns ``episodes``, each with its sequence, masks and outcome filled in
    (and its ``env`` reference dropped).
    """
    live = [episode for episode in episodes if episode.end_reason is None]
    while live:
        prompts = [episode.sequence for episode in live]
        if keep_prompts:
            for episode, prompt in zip(live, prompts, strict=True):
                episode.turn_prompts = [*(episode.turn_prompts or []), list(prompt)]
        replies = generate(live, prompts)
        still_live = []
        for episode, reply in zip(live, replies, strict=True):
            if _step(episode, reply, chat, decode):
                still_live.append(episode)
        live = still_live
    for episode in episodes:
        if episode.start_distance is not None and episode.env is not None:
            episode.process_return = _progress(episode)
        episode.env = None  # the env belongs to the caller, which reuses it
    return episodes


def _progress(episode: Episode) -> float:
    """Return the share of the oracle distance covered: 1 on success, 0 in a dead end."""
    start = episode.start_distance or 0
    if episode.success:
        return 1.0
    end = episode.env.unwrapped.oracle_turns()
    if not start or end is None:
        return 0.0
    return (start - end) / start


def _step(episode: Episode, reply: Generation, chat: ChatTokens, decode) -> bool:
    """Apply one reply to its episode; return whether the episode goes on."""
    episode.completion_ids += reply.token_ids
    episode.env_mask += [1] * len(reply.token_ids)
    episode.logprobs += reply.logprobs
    text = decode(reply.token_ids)
    observation, _, terminated, truncated, info = episode.env.step(to_agent_action(text))
    episode.turns += 1
    episode.invalid_actions += not info.get(VALID_ACTION, True)
    if info.get(SUCCESS) and episode.first_success_turn is None:
        episode.first_success_turn = episode.turns
        episode.success = True
    if terminated or truncated:
        episode.end_reason = SUCCESS if episode.success else BUDGET if truncated else "failure"
        return False
    added = chat.delta(reply.token_ids, observation, info)
    if not chat.encoder.fits(episode.sequence + added):
        episode.end_reason = "context"
        return False
    episode.completion_ids += added
    episode.env_mask += [0] * len(added)
    episode.logprobs += [0.0] * len(added)
    episode.observation, episode.info = observation, info
    return True


def start_episode(
    env: gym.Env,
    chat: ChatTokens,
    task_id: int,
    seed: int,
    budget: int,
    track_progress: bool = False,
) -> Episode:
    """Reset ``env`` to one attempt under ``budget`` turns; return it with its first prompt.

    ``info`` carries ``episode_seed`` as in the evaluator.  With
    ``track_progress`` the oracle distance at reset is kept, so that the
    episode's ``process_return`` is filled in at its end.
    """
    observation, info = env.reset(seed=seed, options={TASK_ID: task_id, BUDGET: budget})
    info[EPISODE_SEED] = seed
    episode = Episode(task_id, seed, budget, env, observation, info)
    if track_progress:
        episode.start_distance = env.unwrapped.oracle_turns()
    episode.prompt_ids = chat.first(observation, info)
    if not chat.encoder.fits(episode.prompt_ids):
        episode.end_reason = "context"
    return episode


class EpisodeRollout(PolicyHolder):
    """A TRL ``rollout_func``: whole episodes of ``env_id`` under a budget spec.

    A rollout is not a policy: it plays episodes with one, :attr:`policy`, an
    :class:`~baselines.llm.agents.policy.LLMPolicy` that owns the prompt style, the
    sampling settings and the seed of each reply, so that the model is
    prompted and sampled as ``HFAgent`` prompts and samples it in evaluation.

    Args:
        settings: a :class:`~baselines.llm.training.train_config.RolloutSettings`,
            taken whole: the env id, the budgets (a
            :class:`~agent_envs.env_stack.BudgetRegime`: a fixed T or a
            BudgetMix; its ``shared``: whether a group's attempts share one
            T), the base seed of episode seeds, budget draws and sampling,
            whether to track each episode's progress toward success with the
            env's oracle (as ``process_return``, for
            :func:`baselines.llm.training.rewards.process_reward`), and the
            policy's settings (:class:`~baselines.llm.training.train_config.PolicySettings`:
            as ``HFAgent``'s; a reply ends once its action line is complete,
            with few-shot examples training task ids must lie below the
            examples' reserved ids and be no example's instance, and the
            temperature, > 0, is the one TRL's trainer must recompute
            log-probs with).
        batch_size: the most episodes per ``generate`` call (``None``: all
            live episodes at once; 1: one at a time, for benchmarks).

    Per call it returns ``prompt_ids``, ``completion_ids``, ``logprobs``,
    ``env_mask`` and one list per episode field: ``task_id``,
    ``episode_seed``, ``success``, ``turns``, ``budget``,
    ``first_success_turn``, ``invalid_actions``, ``end_reason`` and
    ``process_return``.  ``last_stats`` holds the step's summary, and when the
    trainer keeps TRL's ``_metrics`` the summary is logged there too
    (``episodes/success`` and so on).
    """

    def __init__(self, settings: RolloutSettings, batch_size: int | None = None) -> None:
        if not isinstance(settings, RolloutSettings):
            raise TypeError(f"settings must be a RolloutSettings, got {type(settings).__name__}.")
        if not isinstance(settings.budget, BudgetRegime):
            raise TypeError(f"budget must be a BudgetRegime, got {type(settings.budget).__name__}.")
        #: What the rollout plays: the env, the budgets, the seed, the process reward.
        self.settings = settings
        #: The policy the episodes are played with (prompt style, sampling, reply seeds).
        self.policy = LLMPolicy(
            env_id=settings.env_id, seed=settings.seed, **settings.policy.keywords()
        )
        self.batch_size = batch_size
        self._budget_rng = settings.budget.draws.generator(self.seed)
        self._attempts: Counter[int] = Counter()  # attempts played so far per task
        self._stacks: list[gym.Env] = []
        self.last_stats: dict[str, float] = {}

    # ------------------------------------------------------------- TRL entry
    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list]:
        """Play one episode per prompt (K copies in a row per task) and return TRL's dict."""
        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        chat = self.chat_tokens(model, tokenizer)
        if getattr(trainer, "use_vllm", False):
            generate: Generate = VLLMGenerator(trainer)
        else:
            generate = self.hf_generator(model, tokenizer)
        decode = reply_decoder(tokenizer, eos_token_ids(model, tokenizer))
        episodes = self.run([task_of(p) for p in prompts], chat, generate, decode)
        metrics = getattr(trainer, "_metrics", None)
        if isinstance(metrics, dict) and "train" in metrics:
            for key, value in self.last_stats.items():
                metrics["train"][f"episodes/{key}"].append(value)
        return self.to_trl(episodes)

    def run(
        self,
        task_ids: Sequence[int],
        chat: ChatTokens,
        generate: Generate,
        decode: Callable[[list[int]], str],
        keep_prompts: bool = False,
    ) -> list[Episode]:
        """Play one episode per entry of ``task_ids`` (a group per run of equal ids)."""
        env_id, budget, progress = (
            self.settings.env_id,
            self.settings.budget,
            self.settings.process_reward,
        )
        self.style.check_tasks(env_id, task_ids)  # no example's instance, no example id
        episodes = []
        group_budget = None
        for index, task_id in enumerate(task_ids):
            new_group = index == 0 or task_ids[index - 1] != task_id
            if new_group or not budget.shared:
                group_budget = budget.draws.draw(self._budget_rng)
            sample = self._attempts[task_id]
            self._attempts[task_id] += 1
            seed = seeding.episode_seed(self.seed, task_id, sample)
            stack = self._stack(index)
            episodes.append(start_episode(stack, chat, task_id, seed, group_budget, progress))
        play_episodes(episodes, chat, generate, decode, keep_prompts)
        self.last_stats = summarize(episodes)
        return episodes

    def chat_tokens(self, model: Any, tokenizer: Any) -> ChatTokens:
        """Return the episodes' token builder for ``model``: ``HFAgent``'s, same settings."""
        context = context_length(model, tokenizer)
        encoder = PromptEncoder(
            tokenizer,
            self.policy.system_prompt,
            context,
            self.max_new_tokens,
            examples=self.style.examples({}),
        )
        return ChatTokens(encoder, eos_token_ids(model, tokenizer))

    def hf_generator(self, model: Any, tokenizer: Any, prefix_cache: bool = True) -> HFGenerator:
        """Return the episodes' generator for ``model``: replies end as ``HFAgent``'s do."""
        stop = ReplyStop(tokenizer, self.style.reply_format)
        return HFGenerator(model, tokenizer, self, self.batch_size, prefix_cache, stop)

    def _stack(self, index: int) -> gym.Env:
        # Envs are reused across steps: building a stack costs more than a reset.
        budget = self.settings.budget
        while len(self._stacks) <= index:
            regime = BudgetRegime.fixed(budget.max_budget, budget.visible)
            self._stacks.append(make_stack(self.settings.env_id, regime, TRAINING_STACK))
        return self._stacks[index]

    @staticmethod
    def to_trl(episodes: list[Episode]) -> dict[str, list]:
        """Return the dict a TRL ``rollout_func`` returns for ``episodes``."""
        output: dict[str, list] = {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids or [0] for e in episodes],
            "logprobs": [e.logprobs or [0.0] for e in episodes],
            "env_mask": [e.env_mask or [0] for e in episodes],
        }
        for name in _FIELDS:
            output[name] = [getattr(e, name) for e in episodes]
        return output

    def sampling_seed(self, episode: Episode, prompt: list[int]) -> int:
        """Return the seed of one reply, derived as ``HFAgent`` derives it."""
        return self.policy.reply_seed(episode.episode_seed, episode.turns, prompt)


def summarize(episodes: Sequence[Episode]) -> dict[str, float]:
    """Return a step's summary: success rate, mean turns, invalid actions per turn.

    Of the end reasons only ``"context"`` has a share (``ended_context``).
    """
    if not episodes:
        return {}
    count = len(episodes)
    turns = sum(e.turns for e in episodes)
    stats = {
        SUCCESS: sum(e.success for e in episodes) / count,
        "turns": turns / count,
        "invalid_rate": sum(e.invalid_actions for e in episodes) / max(turns, 1),
    }
    reasons = Counter(e.end_reason for e in episodes)
    stats["ended_context"] = reasons["context"] / count
    return stats
