"""GRPO wiring for ``train-llm``: the model, the warm start, TRL's trainer and its callbacks.

:func:`run_grpo` trains a causal LM with TRL's ``GRPOTrainer`` on whole
episodes played by :class:`baselines.llm.rollout.EpisodeRollout`;
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

from transformers import TrainerCallback

from agent_envs.files import path_error
from agent_envs.protocol import SUCCESS
from baselines.llm.train_config import COLLAPSE_WINDOW, LLMTrainConfig

__all__ = [
    "CPU_SAFE_GRPO",
    "GRPOLog",
    "grpo_config",
    "load_model",
    "make_rollout",
    "run_grpo",
    "save_folder",
    "warm_start_model",
]

#: TRL's defaults that break CPU runs (bf16, gradient checkpointing), skew the
#: recomputed log-probs (dropout) or report to a remote tracker.
CPU_SAFE_GRPO = {
    "bf16": False,
    "gradient_checkpointing": False,
    "disable_dropout": True,
    "report_to": "none",
}


def grpo_config(output_dir: str | os.PathLike[str], **settings: Any) -> Any:
    """Return a ``trl.GRPOConfig`` with :data:`CPU_SAFE_GRPO` under ``settings``."""
    from trl import GRPOConfig

    return GRPOConfig(output_dir=str(output_dir), **{**CPU_SAFE_GRPO, **settings})


def load_model(config: LLMTrainConfig, out: Path) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)``: the given model (folder, ``.gguf`` or short name), or
    the tiny model built in ``out/base``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if config.model is None:
        from baselines.llm.tiny import build_tiny_model

        path = build_tiny_model(
            out / "base", config.env_id, seed=config.seed, context=config.context
        )
    else:
        from baselines.llm.models import resolve_model

        path = resolve_model(config.model)
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left", local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    return model, tokenizer


def make_rollout(config: LLMTrainConfig) -> Any:
    """Return the :class:`~baselines.llm.rollout.EpisodeRollout` of ``config``."""
    from baselines.llm.rollout import EpisodeRollout

    return EpisodeRollout(
        config.env_id,
        config.budget,
        seed=config.seed,
        process_reward=config.process_reward > 0,
        **config.policy_settings(),
    )


def warm_start_model(
    model: Any, tokenizer: Any, config: LLMTrainConfig, work: Path, log: Callable[[str], None]
) -> Any:
    """Fine-tune on noisy-oracle transcripts of the training tasks; return the model."""
    from baselines.llm.warm_start import demonstrations, warm_start

    rows = demonstrations(
        model,
        tokenizer,
        make_rollout(config),
        config.tasks,
        config.warm_start_episodes,
        config.warm_start_epsilon,
    )
    log(f"warm start: {len(rows)} noisy-oracle episodes, {config.warm_start} steps")
    return warm_start(
        model,
        tokenizer,
        rows,
        config.warm_start,
        learning_rate=config.warm_start_lr,
        seed=config.seed,
        output_dir=str(work),
    )


def run_grpo(
    model: Any, tokenizer: Any, config: LLMTrainConfig, work: Path, progress: GRPOLog
) -> Any:
    """Train with GRPO on whole episodes; return the model.

    ``work`` is the Trainer's scratch folder (it saves nothing there);
    ``progress`` logs each step and stops GRPO when the replies collapse.
    """
    from datasets import Dataset
    from transformers import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    from baselines.llm.rewards import outcome_reward, process_reward
    from baselines.llm.tasks import task_prompt

    rewards: list[Any] = [outcome_reward]
    if config.process_reward > 0:
        rewards.append(process_reward(config.process_reward))
    episodes = config.k * config.tasks_per_step
    micro = config.micro_batch or episodes
    args = grpo_config(
        work,
        max_steps=config.steps,
        num_generations=config.k,
        # One rollout per optimiser step, its episodes scored `micro` at a time.
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=episodes // micro,
        steps_per_generation=episodes // micro,
        learning_rate=config.learning_rate,
        lr_scheduler_type="constant",
        temperature=config.temperature,
        max_completion_length=config.max_new_tokens,  # one reply (used by vLLM only)
        beta=config.beta,
        save_strategy="no",
        logging_steps=1,
        seed=config.seed,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=rewards,
        args=args,
        train_dataset=Dataset.from_list([{"prompt": task_prompt(task)} for task in config.tasks]),
        processing_class=tokenizer,
        rollout_func=make_rollout(config),
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
        """Advance the bar; write the line at the first, every tenth and the last step."""
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


def save_folder(out: Path, *savers: Callable[[str], object]) -> None:
    """Let each of ``savers`` write into a staging folder, then move every file into ``out``.

    ``save_pretrained`` writes several files; staged this way, each file of
    ``out`` is replaced whole (one atomic rename each), so a crash or a full
    disk never leaves a cut weight file where a model was.
    """
    try:
        with tempfile.TemporaryDirectory(dir=out, prefix=".saving-") as staging:
            for save in savers:
                save(staging)
            for item in sorted(Path(staging).iterdir()):
                if item.is_dir() and (out / item.name).is_dir():  # a LoRA adapter folder
                    shutil.rmtree(out / item.name)
                os.replace(item, out / item.name)
    except OSError as exc:
        raise path_error(exc, out) from None
