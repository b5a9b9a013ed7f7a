"""The settings of a ``train-llm`` run: :class:`LLMTrainConfig`, each flag written beside its field.

Each phase of :func:`baselines.llm.train.train_llm` takes only its own share
of the settings, resolved once from the config: the model's source
(:meth:`LLMTrainConfig.model_source`), the rollout's settings
(:meth:`LLMTrainConfig.rollout_settings`), the warm start's
(:class:`WarmStartSettings`) and GRPO's (:class:`GRPOSettings`).

This module imports neither torch nor transformers, so the command can parse
and check its flags before loading either.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agent_envs.arguments import flag, int_arg, number_arg, parse_tasks
from agent_envs.evaluation.settings import check_tasks
from baselines.llm.budget_spec import BudgetSpec
from baselines.llm.few_shot import EXAMPLE_POOL
from baselines.llm.lora import LoRASpec
from baselines.llm.model_source import ModelSource
from baselines.llm.policy import LLMPolicy
from baselines.llm.replies import FORMAT_PROMPT, REPLY_FORMATS
from wrappers._core.validators import check_int, check_number, check_probability
from wrappers.errors import InvalidValue
from wrappers.protocol import BUDGET

__all__ = [
    "COLLAPSE_WINDOW",
    "EVAL_FIRST_TASK",
    "QUICK",
    "GRPOSettings",
    "LLMTrainConfig",
    "WarmStartSettings",
]


def _task_ids(text: str) -> tuple[int, ...]:
    """``--tasks``: a count, a range ``a:b`` or ids, as checked task ids."""
    return check_tasks(parse_tasks(text, "--tasks"))


#: The first evaluation task id: held-out tasks start far above the training ids.
EVAL_FIRST_TASK = 10_000
#: The collapse guard averages the invalid-reply rate over this many GRPO steps.
COLLAPSE_WINDOW = 5
#: ``--quick``: just enough of everything to exercise every part once.
QUICK = {"warm_start": 4, "steps": 2, "tasks": 2, "k": 2, "eval_tasks": 2, "eval_samples": 2}


@dataclass(frozen=True)
class WarmStartSettings:
    """The warm start's share of a run's settings (see :class:`LLMTrainConfig`).

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


@dataclass(frozen=True)
class GRPOSettings:
    """GRPO's share of a run's settings (see :class:`LLMTrainConfig`).

    Args:
        steps: optimizer steps (0: none).
        k: attempts per task in a group.
        tasks_per_step: groups per step.
        micro_batch: episodes per forward and backward pass (``None``: all).
        learning_rate, temperature, max_new_tokens, beta: TRL's settings.
        process_reward: the process reward's coefficient (0: outcome only).
        collapse_invalid: the collapse guard's invalid-reply limit.
        tasks: the training task ids.
        seed: the trainer's seed.
    """

    steps: int
    k: int
    tasks_per_step: int
    micro_batch: int | None
    learning_rate: float
    temperature: float
    max_new_tokens: int
    beta: float
    process_reward: float
    collapse_invalid: float
    tasks: tuple[int, ...]
    seed: int

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
            (:func:`baselines.llm.models.resolve_model`); ``None`` builds the tiny model.
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
            and evaluation alike (as ``HFAgent``'s; :mod:`baselines.llm.few_shot`).
        reply_format: ``"action"`` or ``"think"`` (as ``HFAgent``'s; by
            default ``"action"`` with ``few_shot``, else ``"think"``).
        context: the context length of the built-in tiny model, in tokens
            (ignored with ``model``); a longer budget or a wordier env needs
            more, or its episodes end with ``end_reason="context"``.
        lora: train LoRA adapters only (:mod:`baselines.llm.lora`); ``None``:
            full fine-tuning.
        micro_batch: episodes per forward and backward pass of the GRPO update
            (gradients are accumulated over the step's episodes); ``None``:
            the whole step at once.  It bounds memory, not the result.
        beta: the KL penalty to the model GRPO starts from (the warm start),
            TRL's ``beta``.  At 0 the policy may drift anywhere: at lr 1e-3,
            2 of 3 regimes collapsed to 100% invalid replies within 150 steps.
        collapse_invalid: the collapse guard.  GRPO stops, and the sidecar
            says so under ``stopped``, once the invalid-reply rate averaged over
            the last ``COLLAPSE_WINDOW`` steps exceeds this (1 turns it off).
    """

    env_id: str
    budget: BudgetSpec
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
        default=5e-4, metadata=flag("(5e-4)", "--lr", type=number_arg(0, open_low=True))
    )
    warm_start: int = field(
        default=300, metadata=flag("supervised steps before GRPO (300; 0: none)", type=int_arg(0))
    )
    warm_start_episodes: int = 4
    warm_start_epsilon: float = 0.25
    warm_start_lr: float = 1e-2
    process_reward: float = field(
        default=0.0, metadata=flag("its coefficient (0: off)", type=number_arg(0))
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
            "'action' (the bare action) or 'think' (default: action with --few-shot)",
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
    collapse_invalid: float = field(
        default=0.5,
        metadata=flag(
            "stop GRPO once the invalid-reply rate over 5 steps exceeds this (0.5; 1: never)",
            type=number_arg(0, 1, open_low=True),
        ),
    )

    def __post_init__(self) -> None:
        for name in ("k", "tasks_per_step", "max_new_tokens", "context"):
            check_int(getattr(self, name), name, 1)
        if self.k < 2:
            raise InvalidValue(
                f"k must be >= 2: GRPO compares attempts within a group; got {self.k}."
            )
        for name in ("steps", "warm_start", "warm_start_episodes", "seed"):
            check_int(getattr(self, name), name, 0)
        for name in ("learning_rate", "warm_start_lr", "temperature"):
            check_number(getattr(self, name), name, 0.0, open_low=True)
        for name in ("process_reward", "beta"):
            check_number(getattr(self, name), name, 0.0)
        check_number(self.collapse_invalid, "collapse_invalid", 0.0, 1.0, open_low=True)
        check_probability(self.warm_start_epsilon, "warm_start_epsilon")
        LLMPolicy(**self.policy_settings())  # checked by the owner that will use them
        if not self.tasks:
            raise InvalidValue("tasks must not be empty.")
        if self.micro_batch is not None and (
            isinstance(self.micro_batch, bool)
            or not isinstance(self.micro_batch, int)
            or self.micro_batch < 1
            or (self.k * self.tasks_per_step) % self.micro_batch
        ):
            raise InvalidValue(
                f"micro_batch must divide the {self.k * self.tasks_per_step} episodes of a "
                f"step, got {self.micro_batch!r}."
            )

    def policy_settings(self) -> dict[str, Any]:
        """Return the prompt and sampling settings, as every :class:`LLMPolicy` takes them.

        The GRPO rollout and the evaluation's ``HFAgent`` both take these, so
        the model is prompted and sampled alike in training and evaluation.
        """
        return {
            "system_prompt": self.system_prompt,
            "few_shot": self.few_shot,
            "reply_format": self.reply_format,
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
        }

    def model_source(self) -> ModelSource:
        """Return where the model comes from: ``model``, or the tiny model for ``env_id``."""
        return ModelSource(self.model, self.env_id, self.seed, self.context)

    def rollout_settings(self) -> dict[str, Any]:
        """Return the keywords of the run's :class:`~baselines.llm.rollout.EpisodeRollout`."""
        return dict(
            env_id=self.env_id,
            budget=self.budget,
            seed=self.seed,
            process_reward=self.process_reward > 0,
            **self.policy_settings(),
        )

    def warm_start_settings(self) -> WarmStartSettings:
        """Return the warm start's share of the settings."""
        return WarmStartSettings(
            self.warm_start,
            self.warm_start_episodes,
            self.warm_start_epsilon,
            self.warm_start_lr,
            self.tasks,
            self.seed,
        )

    def grpo_settings(self) -> GRPOSettings:
        """Return GRPO's share of the settings."""
        return GRPOSettings(
            self.steps,
            self.k,
            self.tasks_per_step,
            self.micro_batch,
            self.learning_rate,
            self.temperature,
            self.max_new_tokens,
            self.beta,
            self.process_reward,
            self.collapse_invalid,
            self.tasks,
            self.seed,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the settings as a JSON-ready dict."""
        data = asdict(self)
        data[BUDGET] = self.budget.to_json()
        data["tasks"] = list(self.tasks)
        return data
