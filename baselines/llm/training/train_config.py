"""The settings of a ``train-llm`` run: :class:`LLMTrainConfig`, each flag written beside its field.

The config is the run's flat record (its flags, and ``train_llm.json``); on
construction it builds one settings object per phase and hands each whole to
the phase that uses it, as TRL hands a ``GRPOConfig`` to its trainer:
:attr:`LLMTrainConfig.source` (a :class:`~baselines.llm.models.model_source.ModelSource`),
:attr:`~LLMTrainConfig.rollout` (:class:`RolloutSettings`, holding the
:class:`PolicySettings` that evaluation prompts and samples with too),
:attr:`~LLMTrainConfig.warm` (:class:`WarmStartSettings`) and
:attr:`~LLMTrainConfig.grpo` (:class:`GRPOSettings`).  Each checks its own
values, so a bad setting is refused before any model loads.

This module imports neither torch nor transformers, so the command can parse
and check its flags before loading either.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from agent_envs.arguments import flag, int_arg, number_arg, parse_tasks
from agent_envs.env_stack import BudgetRegime
from agent_envs.evaluation.settings import check_tasks
from baselines.llm.agents.policy import check_temperature
from baselines.llm.models.lora import LoRASpec
from baselines.llm.models.model_source import ModelSource
from baselines.llm.models.precision import DTYPES, check_dtype, resolve_dtype
from baselines.llm.prompting.few_shot import EXAMPLE_POOL
from baselines.llm.prompting.replies import FORMAT_PROMPT, REPLY_FORMATS
from baselines.llm.training.rewards import REWARDS
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import BUDGET
from wrappers.utils.validators import check_int, check_number, check_probability

__all__ = [
    "COLLAPSE_WINDOW",
    "EVAL_FIRST_TASK",
    "QUICK",
    "GRPOSettings",
    "LLMTrainConfig",
    "PolicySettings",
    "RolloutSettings",
    "WarmStartSettings",
]


def _task_ids(text: str) -> tuple[int, ...]:
    """``--tasks``: a count, a range ``a:b`` or ids, as checked task ids.

    argparse shows an ``ArgumentTypeError``'s message; any other error only
    as "invalid _task_ids value".
    """
    try:
        return check_tasks(parse_tasks(text, "--tasks"))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).rstrip(".")) from None


#: The first evaluation task id: held-out tasks start far above the training ids.
EVAL_FIRST_TASK = 10_000
#: The collapse guard averages the invalid-reply rate over this many GRPO steps.
COLLAPSE_WINDOW = 5
#: ``--quick``: just enough of everything to exercise every part once.
QUICK = {"warm_start": 4, "steps": 2, "tasks": 2, "k": 2, "eval_tasks": 2, "eval_samples": 2}


@dataclass(frozen=True)
class PolicySettings:
    """How the model is prompted and sampled, in training and evaluation alike.

    The keywords of every :class:`~baselines.llm.agents.policy.LLMPolicy`: the GRPO
    rollout's and the evaluation's ``HFAgent`` take the same ones, so the
    model is evaluated as it was trained.  Checked here, as the policy would
    check them, without building one.

    Args:
        system_prompt: the system prompt (:data:`~baselines.llm.prompting.replies.FORMAT_PROMPT`:
            the reply format's own; ``None``: none).
        few_shot: oracle episodes shown before each real one.
        reply_format: ``"action"``, ``"think"`` or ``None`` (the default for ``few_shot``).
        temperature: the sampling temperature (> 0: GRPO samples).
        max_new_tokens: the most tokens of one reply.
    """

    system_prompt: str | None = FORMAT_PROMPT
    few_shot: int = 0
    reply_format: str | None = None
    temperature: float = 1.0
    max_new_tokens: int = 8

    def __post_init__(self) -> None:
        check_int(self.max_new_tokens, "max_new_tokens", 1)
        check_temperature(self.temperature, greedy=False)
        check_int(self.few_shot, "few_shot", 0, EXAMPLE_POOL)
        if self.reply_format is not None and self.reply_format not in REPLY_FORMATS:
            raise InvalidValue(
                f"reply_format must be one of {REPLY_FORMATS}, got {self.reply_format!r}."
            )
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise InvalidType(f"system_prompt must be a str or None, got {self.system_prompt!r}.")

    def keywords(self) -> dict[str, Any]:
        """Return the settings as the keywords an ``LLMPolicy`` (or ``HFAgent``) takes."""
        return asdict(self)


@dataclass(frozen=True)
class RolloutSettings:
    """The rollout's settings: which episodes it plays, and the policy it plays them with.

    Args:
        env_id: a registered env id.
        budget: the turn budgets of the episodes (a
            :class:`~agent_envs.env_stack.BudgetRegime`, which the rollout
            checks when it is built).
        policy: how the model is prompted and sampled (by default
            :class:`PolicySettings`' defaults).
        seed: the base seed of episode seeds, budget draws and sampling.
        process_reward: track each episode's progress (for the process reward).
    """

    env_id: str
    budget: BudgetRegime
    policy: PolicySettings = field(default_factory=PolicySettings)
    seed: int = 0
    process_reward: bool = False

    def __post_init__(self) -> None:
        check_int(self.seed, "seed", 0)


@dataclass(frozen=True)
class WarmStartSettings:
    """The warm start's settings (see :class:`LLMTrainConfig`; messages name its flags).

    Args:
        steps: supervised steps (0: none).
        episodes: noisy-oracle episodes per training task.
        epsilon: the noisy oracle's random-action probability.
        learning_rate: the warm start's learning rate.
        tasks: the training task ids.
        seed: the trainer's seed.
    """

    steps: int
    episodes: int
    epsilon: float
    learning_rate: float
    tasks: tuple[int, ...]
    seed: int

    def __post_init__(self) -> None:
        check_int(self.steps, "warm_start", 0)
        check_int(self.episodes, "warm_start_episodes", 0)
        check_number(self.learning_rate, "warm_start_lr", 0.0, open_low=True)
        check_probability(self.epsilon, "warm_start_epsilon")


@dataclass(frozen=True)
class GRPOSettings:
    """GRPO's settings (see :class:`LLMTrainConfig`; messages name its flags).

    Args:
        steps: optimizer steps (0: none).
        k: attempts per task in a group.
        tasks_per_step: groups per step.
        micro_batch: episodes per forward and backward pass (``None``: all).
        learning_rate, max_new_tokens, beta: TRL's settings (its
            ``temperature`` is the rollout's: :class:`PolicySettings`).
        process_reward: the process reward's coefficient (0: outcome only).
        collapse_invalid: the collapse guard's invalid-reply limit.
        tasks: the training task ids.
        seed: the trainer's seed.
        reward: the episode reward (:data:`~baselines.llm.training.rewards.REWARDS`).
    """

    steps: int
    k: int
    tasks_per_step: int
    micro_batch: int | None
    learning_rate: float
    max_new_tokens: int
    beta: float
    process_reward: float
    collapse_invalid: float
    tasks: tuple[int, ...]
    seed: int
    reward: str = "outcome"

    def __post_init__(self) -> None:
        if self.reward not in tuple(REWARDS):
            raise InvalidValue(f"reward must be one of {tuple(REWARDS)}, got {self.reward!r}.")
        for name in ("k", "tasks_per_step"):
            check_int(getattr(self, name), name, 1)
        if self.k < 2:
            raise InvalidValue(
                f"k must be >= 2: GRPO compares attempts within a group; got {self.k}."
            )
        check_int(self.steps, "steps", 0)
        check_number(self.learning_rate, "learning_rate", 0.0, open_low=True)
        for name in ("process_reward", "beta"):
            check_number(getattr(self, name), name, 0.0)
        check_number(self.collapse_invalid, "collapse_invalid", 0.0, 1.0, open_low=True)
        if not self.tasks:
            raise InvalidValue("tasks must not be empty.")
        micro = self.micro_batch
        if micro is not None and (
            isinstance(micro, bool)
            or not isinstance(micro, int)
            or micro < 1
            or self.episodes % micro
        ):
            raise InvalidValue(
                f"micro_batch must divide the {self.episodes} episodes of a step, got {micro!r}."
            )

    @property
    def episodes(self) -> int:
        """The episodes one step plays: ``k`` attempts of ``tasks_per_step`` tasks."""
        return self.k * self.tasks_per_step


@dataclass(frozen=True)
class LLMTrainConfig:
    """Every setting of one training run (saved in ``train_llm.json``).

    A field with ``flag`` metadata is also ``train-llm``'s flag
    (:func:`agent_envs.arguments.add_config_arguments`), written once here.

    Args:
        env_id: a registered env id.
        budget: the turn budgets of training episodes (fixed T or BudgetMix).
        model: a local HF folder, a .gguf file or a short name such as ``smollm2-135m``
            (:func:`baselines.llm.models.resolve.resolve_model`); ``None`` builds the tiny model.
        tasks: the training task ids.
        k: attempts per task in a GRPO group (``num_generations``).
        tasks_per_step: tasks (groups) per GRPO step; a step plays
            ``k * tasks_per_step`` episodes.
        steps: GRPO optimizer steps; 0 runs no GRPO, and the model after the
            warm start (with ``warm_start=0``, the starting model itself) is
            saved and evaluated, as the "before" of a comparison.
        learning_rate: GRPO's learning rate.
        warm_start: supervised warm-start steps (0: none).
        warm_start_episodes: noisy-oracle episodes per training task.
        warm_start_epsilon: the noisy oracle's random-action probability.
        warm_start_lr: the warm start's learning rate.
        process_reward: coefficient of the process reward (0: outcome only).
        seed: seeds the tiny model, the episodes, sampling and training.
        max_new_tokens: the most tokens of one reply.
        temperature: the sampling temperature (training and evaluation).
        system_prompt: the system prompt (as ``HFAgent``'s; by default the
            reply format's own).
        few_shot: oracle episodes shown before each real one, in training
            and evaluation alike (as ``HFAgent``'s; :mod:`baselines.llm.prompting.few_shot`).
        reply_format: ``"action"`` or ``"think"`` (as ``HFAgent``'s; by
            default ``"action"`` with ``few_shot``, else ``"think"``).
        context: the context length of the built-in tiny model, in tokens
            (ignored with ``model``); a longer budget or a wordier env needs
            more, or its episodes end with ``end_reason="context"``.
        lora: train LoRA adapters only (:mod:`baselines.llm.models.lora`); ``None``:
            full fine-tuning.
        micro_batch: episodes per forward and backward pass of the GRPO update
            (gradients are accumulated over the step's episodes); ``None``:
            the whole step at once.  It bounds memory, not the result.
        beta: the KL penalty to the model GRPO starts from (the warm start),
            TRL's ``beta``.  At 0 the policy may drift anywhere: at lr 1e-3,
            2 of 3 regimes collapsed to 100% invalid replies within 150 steps.
        reward: the episode reward GRPO optimises: ``outcome`` (1.0 on
            success) or ``validity`` (the share of the episode's replies that
            were valid actions: a control that rewards the format alone).
        dtype: the number format of the model's compute
            (:mod:`baselines.llm.models.precision`): ``float32``; ``bfloat16``, the
            frozen base stored in bfloat16 and every forward under bfloat16
            autocast, the LoRA adapters, their gradients and the optimizer
            state float32 (needs ``lora``); or ``auto``, bfloat16 where the
            CPU computes it natively and the run trains LoRA, else float32.
            The evaluation after training computes in the same format.
        collapse_invalid: the collapse guard.  GRPO stops, and the sidecar
            says so under ``stopped``, once the invalid-reply rate averaged over
            the last ``COLLAPSE_WINDOW`` steps exceeds this (1 turns it off).
    """

    env_id: str
    budget: BudgetRegime
    model: str | None = field(
        default=None,
        metadata=flag("a local HF folder, a .gguf file or smollm2-135m (default: the tiny model)"),
    )
    tasks: tuple[int, ...] = field(
        default=tuple(range(64)),
        metadata=flag(
            "training task ids: count (64 = ids 0..63), a:b or ids", type=_task_ids, default="64"
        ),
    )
    k: int = field(
        default=8, metadata=flag("GRPO's K: attempts per task (8)", "--group-size", type=int_arg(2))
    )
    tasks_per_step: int = field(default=4, metadata=flag("groups per step (4)", type=int_arg(1)))
    steps: int = field(
        default=150,
        metadata=flag(
            "GRPO steps (150). 0: no GRPO; the model GRPO would start from (after the warm "
            "start) is saved and evaluated, so --steps 0 --warm-start 0 evaluates the given model",
            type=int_arg(0),
        ),
    )
    learning_rate: float = field(
        default=5e-4,
        metadata=flag("GRPO's learning rate (5e-4)", "--lr", type=number_arg(0, open_low=True)),
    )
    warm_start: int = field(
        default=300, metadata=flag("supervised steps before GRPO (300; 0: none)", type=int_arg(0))
    )
    warm_start_episodes: int = 4
    warm_start_epsilon: float = 0.25
    warm_start_lr: float = 1e-2
    process_reward: float = field(
        default=0.0, metadata=flag("the process reward's coefficient (0: off)", type=number_arg(0))
    )
    seed: int = field(default=0, metadata=flag("seed (0)", type=int_arg(0)))
    max_new_tokens: int = field(default=8, metadata=flag("tokens per reply (8)", type=int_arg(1)))
    temperature: float = field(
        default=1.0,
        metadata=flag(
            "sampling temperature, in training and evaluation (1.0)",
            type=number_arg(0, open_low=True),
        ),
    )
    system_prompt: str | None = FORMAT_PROMPT
    few_shot: int = field(
        default=0,
        metadata=flag(
            "oracle episodes shown before each real one, in training and evaluation (0)",
            type=int_arg(0, EXAMPLE_POOL),
        ),
    )
    reply_format: str | None = field(
        default=None,
        metadata=flag(
            "'action' (the bare action) or 'think' (default: action with --few-shot, else think)",
            choices=REPLY_FORMATS,
        ),
    )
    context: int = field(
        default=1024, metadata=flag("the tiny model's context in tokens (1024)", type=int_arg(1))
    )
    lora: LoRASpec | None = None
    micro_batch: int | None = field(
        default=None,
        metadata=flag(
            "episodes per forward/backward of the GRPO update, a divisor of --group-size x "
            "--tasks-per-step (default: the whole step)",
            type=int_arg(1),
        ),
    )
    beta: float = field(
        default=0.04, metadata=flag("KL penalty to the warm start (0.04)", type=number_arg(0))
    )
    reward: str = field(
        default="outcome",
        metadata=flag(
            "the episode reward: outcome (1 on success) or validity (the share of valid "
            "replies, a format-only control) (outcome)",
            choices=tuple(REWARDS),
        ),
    )
    dtype: str = field(
        default="float32",
        metadata=flag(
            "the number format: float32, bfloat16 (the frozen base in bfloat16, the LoRA "
            "adapters float32; needs --lora) or auto (bfloat16 where the CPU has it natively "
            "and the run trains LoRA, else float32) (float32)",
            choices=DTYPES,
        ),
    )
    collapse_invalid: float = field(
        default=0.5,
        metadata=flag(
            "stop GRPO once the invalid-reply rate over 5 steps exceeds this (0.5; 1: never)",
            type=number_arg(0, 1, open_low=True),
        ),
    )

    #: The phases' settings, built from the fields above (not fields of the record).
    source: ModelSource = field(init=False, repr=False, compare=False)
    policy: PolicySettings = field(init=False, repr=False, compare=False)
    rollout: RolloutSettings = field(init=False, repr=False, compare=False)
    warm: WarmStartSettings = field(init=False, repr=False, compare=False)
    grpo: GRPOSettings = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Build (and so check) each phase's settings once, by name."""
        check_dtype(self.dtype)
        if self.dtype == "bfloat16" and self.lora is None:
            resolve_dtype(self.dtype, frozen_base=False)  # raises: says how to fix it
        policy = PolicySettings(
            system_prompt=self.system_prompt,
            few_shot=self.few_shot,
            reply_format=self.reply_format,
            temperature=self.temperature,
            max_new_tokens=self.max_new_tokens,
        )
        phases = {
            "policy": policy,
            "rollout": RolloutSettings(
                env_id=self.env_id,
                budget=self.budget,
                policy=policy,
                seed=self.seed,
                process_reward=self.process_reward > 0,
            ),
            "source": ModelSource(self.model, self.env_id, seed=self.seed, context=self.context),
            "warm": WarmStartSettings(
                steps=self.warm_start,
                episodes=self.warm_start_episodes,
                epsilon=self.warm_start_epsilon,
                learning_rate=self.warm_start_lr,
                tasks=self.tasks,
                seed=self.seed,
            ),
            "grpo": GRPOSettings(
                steps=self.steps,
                k=self.k,
                tasks_per_step=self.tasks_per_step,
                micro_batch=self.micro_batch,
                learning_rate=self.learning_rate,
                max_new_tokens=self.max_new_tokens,
                beta=self.beta,
                process_reward=self.process_reward,
                collapse_invalid=self.collapse_invalid,
                tasks=self.tasks,
                seed=self.seed,
                reward=self.reward,
            ),
        }
        for name, settings in phases.items():
            object.__setattr__(self, name, settings)

    def compute_dtype(self, device: str = "cpu") -> str:
        """Return the dtype this run computes in on ``device``: ``auto`` resolved."""
        return resolve_dtype(self.dtype, device, frozen_base=self.lora is not None)

    def to_json(self) -> dict[str, Any]:
        """Return the record's settings (its fields, not the phases built from them) as JSON."""
        data = {item.name: getattr(self, item.name) for item in fields(self) if item.init}
        data[BUDGET] = self.budget.to_json()
        data["tasks"] = list(self.tasks)
        data["lora"] = None if self.lora is None else asdict(self.lora)
        return data
