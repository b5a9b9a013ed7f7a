"""GRPO wiring for ``train-llm``: TRL's trainer and its one callback.

:func:`train_grpo` trains a causal LM with TRL's ``GRPOTrainer`` (its
log-probs computed with the shared opening once,
:mod:`baselines.llm.training.shared_opening`) on whole
episodes played by a :class:`baselines.llm.training.rollout.EpisodeRollout`, taking
GRPO's settings whole (:class:`~baselines.llm.training.train_config.GRPOSettings`);
:class:`GRPOLog` is its one callback: a short line per step, the training
log, and the collapse guard.  Imports transformers (the ``[rl]`` extra).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainingArguments

from agent_envs.files import save_folder
from baselines.llm.training.train_config import COLLAPSE_WINDOW, GRPOSettings, LLMTrainConfig
from wrappers.protocol import SUCCESS

__all__ = [
    "CPU_SAFE_GRPO",
    "GRPOLog",
    "grpo_config",
    "make_rollout",
    "no_checkpointing",
    "save_folder",
    "train_grpo",
]

#: TRL's defaults that break CPU runs (bf16, and activation checkpointing:
#: :func:`no_checkpointing`), skew the recomputed log-probs (dropout), report
#: to a remote tracker or warn on every CPU run (pinned memory needs a GPU).
CPU_SAFE_GRPO = {
    "bf16": False,
    "disable_dropout": True,
    "report_to": "none",
    "dataloader_pin_memory": False,
}


def no_checkpointing() -> dict[str, bool]:
    """Return the training argument that turns TRL's default activation checkpointing off.

    transformers 5.23 renamed ``gradient_checkpointing`` to
    ``activation_checkpointing`` and warns on the old name; older releases
    know only the old one.
    """
    renamed = "activation_checkpointing" in TrainingArguments.__dataclass_fields__
    return {"activation_checkpointing" if renamed else "gradient_checkpointing": False}


def grpo_config(output_dir: str | os.PathLike[str], **settings: Any) -> Any:
    """Return a ``trl.GRPOConfig`` with :data:`CPU_SAFE_GRPO` under ``settings``."""
    from trl import GRPOConfig

    safe = {**CPU_SAFE_GRPO, **no_checkpointing()}
    return GRPOConfig(output_dir=str(output_dir), **{**safe, **settings})


def make_rollout(config: LLMTrainConfig) -> Any:
    """Return the :class:`~baselines.llm.training.rollout.EpisodeRollout` of ``config``."""
    from baselines.llm.training.rollout import EpisodeRollout

    return EpisodeRollout(config.rollout)


def train_grpo(
    model: Any,
    tokenizer: Any,
    rollout: Any,
    settings: GRPOSettings,
    work: Path,
    progress: GRPOLog,
) -> Any:
    """Train with GRPO on whole episodes that ``rollout`` plays; return the model.

    ``work`` is the Trainer's scratch folder (it saves nothing there);
    ``progress`` logs each step and stops GRPO when the replies collapse.
    """
    from datasets import Dataset
    from transformers import PrinterCallback, ProgressCallback

    from baselines.llm.training.rewards import REWARDS, process_reward
    from baselines.llm.training.rollout import task_prompt
    from baselines.llm.training.shared_opening import SharedOpeningGRPOTrainer

    args = _trainer_args(settings, rollout.temperature, work)
    rewards: list[Any] = [REWARDS[settings.reward]]
    if settings.process_reward > 0:
        rewards.append(process_reward(settings.process_reward))
    trainer = SharedOpeningGRPOTrainer(
        model=model,
        reward_funcs=rewards,
        args=args,
        train_dataset=Dataset.from_list([{"prompt": task_prompt(t)} for t in settings.tasks]),
        processing_class=tokenizer,
        rollout_func=rollout,
    )
    if trainer.ref_model is not None:
        # TRL reloads the KL reference from the model's folder, which after an
        # in-process warm start holds the untrained base: anchor it to the
        # weights GRPO starts from instead.
        trainer.ref_model.load_state_dict(model.state_dict())
    # TRL's dict printing and bar give way to the one short line per step.
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(progress)
    trainer.train()
    return trainer.model


def _trainer_args(settings: GRPOSettings, temperature: float, work: Path) -> Any:
    """Return TRL's ``GRPOConfig`` for GRPO's settings, working in ``work``.

    ``temperature`` is the rollout's: TRL recomputes the log-probabilities
    of the sampled tokens with it.
    """
    micro = settings.micro_batch or settings.episodes
    return grpo_config(
        work,
        max_steps=settings.steps,
        num_generations=settings.k,
        # One rollout per optimiser step, its episodes scored `micro` at a time.
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=settings.episodes // micro,
        steps_per_generation=settings.episodes // micro,
        learning_rate=settings.learning_rate,
        lr_scheduler_type="constant",
        temperature=temperature,
        max_completion_length=settings.max_new_tokens,  # one reply (used by vLLM only)
        beta=settings.beta,
        save_strategy="no",
        logging_steps=1,
        seed=settings.seed,
        disable_tqdm=True,
    )


class GRPOLog(TrainerCallback):
    """GRPO's one callback: a short line per step, the training log, the collapse guard.

    Attributes:
        history: one entry per GRPO step (success, turns, invalid rate, KL, ...).
        stopped: filled by the collapse guard when it stops GRPO (else empty):
            the step, the invalid-reply rate and the limit.
    """

    def __init__(self, steps: int, limit: float, log: Callable[[str], None] = print) -> None:
        self.steps = steps
        self.limit = limit
        self.log = log
        self.history: list[dict[str, Any]] = []
        self.stopped: dict[str, Any] = {}
        self.bar = _progress(steps)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "loss" not in logs:
            return
        entry = {
            "step": state.global_step,
            SUCCESS: logs.get("episodes/success"),
            "turns": logs.get("episodes/turns"),
            "invalid": logs.get("episodes/invalid_rate"),
            "zero_std": logs.get("frac_reward_zero_std"),  # groups with no signal
            "kl": logs.get("kl"),
            "reward": logs.get("reward"),
            "loss": logs.get("loss"),
            "seconds": logs.get("step_time"),
        }
        self.history.append(entry)
        self._show(entry, state.global_step)
        self._guard(state.global_step, control)

    def on_train_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.close()

    def _show(self, entry: dict[str, Any], step: int) -> None:
        """Advance the bar and write the line at the first, every tenth and the last step.

        Without a bar (stderr is no terminal, or no tqdm) the line goes to ``log``
        at every step.
        """
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(success=entry[SUCCESS], reward=entry["reward"])
        if self.bar is None or step == 1 or step % 10 == 0 or step == self.steps:
            line = " ".join(
                f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
                for key, value in entry.items()
                if value is not None
            )
            (self.bar.write if self.bar is not None else self.log)(line)

    def _guard(self, step: int, control: Any) -> None:
        """Stop GRPO once the invalid-reply rate over the last steps exceeds the limit."""
        recent = [
            e["invalid"] for e in self.history[-COLLAPSE_WINDOW:] if e.get("invalid") is not None
        ]
        if self.stopped or len(recent) < COLLAPSE_WINDOW or self.limit >= 1:
            return
        rate = sum(recent) / len(recent)
        if rate > self.limit:
            self.stopped.update(step=step, invalid_rate=round(rate, 4), limit=self.limit)
            control.should_training_stop = True
            self.log(
                f"collapse guard: stopped GRPO at step {step}: invalid-reply "
                f"rate {rate:.2f} over the last {COLLAPSE_WINDOW} steps > {self.limit}"
            )


def _progress(total: int) -> Any:
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="GRPO", unit="step")


def scratch_folder(out: Path) -> Path:
    """Return a new, empty folder in ``out`` for the Trainer (never a folder already there)."""
    out.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=out, prefix=".checkpoints-"))


def remove_scratch(folder: Path) -> None:
    """Remove a folder :func:`scratch_folder` made."""
    shutil.rmtree(folder, ignore_errors=True)
