"""Train a causal LM on whole episodes of an agent_envs env: warm start, then GRPO.

Read top to bottom: the settings (:class:`LLMTrainConfig`), the model, the
supervised warm start on noisy-oracle transcripts
(:mod:`baselines.llm.warm_start`), GRPO with TRL and the episode rollout
(:mod:`baselines.llm.rollout`), saving, and an optional evaluation on held-out
tasks.  Run it through the package CLI or as a script::

    agent-envs train-llm agent_envs/GuessNumber-v0 --budget-mix 4,6,8,12 \\
        --warm-start 300 --steps 150 --out runs/guess-mix
    python -m baselines.llm.train agent_envs/GuessNumber-v0 --quick

Without ``--model`` it trains the built-in tiny model
(:mod:`baselines.llm.tiny`) from scratch.  The output folder holds the model
and tokenizer (``from_pretrained`` loads it, so does ``--agent hf``),
``train_llm.json`` (every setting, the exact evaluation command, the training
log) and, unless ``--eval-tasks 0``, ``result.json`` (the Pass@(K,T) surface
on the evaluation tasks).

Task ids.  Training uses ``--tasks`` (default ids ``0..63``); evaluation uses
``--eval-tasks`` (default ids ``10000..10099``), disjoint from the training ids
unless you make them overlap (then a warning says so).

Needs the ``[rl]`` extra (TRL, datasets, transformers, torch).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agent_envs.arguments import (
    BudgetArguments,
    EvalArguments,
    Parser,
    UsageError,
    add_budget_arguments,
    add_eval_arguments,
    deprecated,
    int_arg,
    int_list,
    number_arg,
    parse_tasks,
    run_command,
)
from agent_envs.evaluation.settings import check_tasks
from agent_envs.files import add_run_folder_flags, atomic_write_text, path_error
from agent_envs.protocol import BUDGET, SUCCESS
from baselines.llm.budget_spec import BudgetSpec
from baselines.llm.few_shot import EXAMPLE_POOL, PromptStyle
from baselines.llm.lora import LoRASpec, apply_lora, save_model
from baselines.llm.prompting import FORMAT_PROMPT, REPLY_FORMATS
from wrappers.validators import check_int, check_number, check_probability

__all__ = [
    "EVAL_FIRST_TASK",
    "LLMTrainConfig",
    "build_parser",
    "eval_command",
    "evaluate_model",
    "main",
    "train_llm",
]

# ---------------------------------------------------------------- settings
#: The first evaluation task id: held-out tasks start far above the training ids.
EVAL_FIRST_TASK = 10_000
#: The collapse guard averages the invalid-reply rate over this many GRPO steps.
COLLAPSE_WINDOW = 5
#: ``--quick``: just enough of everything to exercise every part once.
QUICK = {"warm_start": 4, "steps": 2, "tasks": 2, "k": 2, "eval_tasks": 2, "eval_samples": 2}


@dataclass(frozen=True)
class LLMTrainConfig:
    """Every setting of one training run (saved in ``train_llm.json``).

    Args:
        env_id: a registered env id.
        budget: the turn budgets of training episodes (fixed T or BudgetMix).
        model: a local HF folder, a .gguf file or a short name such as ``smollm2-135m``
            (:func:`baselines.llm.models.resolve_model`); ``None`` builds the tiny model.
        tasks: the training task ids.
        k: attempts per task in a GRPO group (``num_generations``).
        tasks_per_step: tasks (groups) per GRPO step; a step plays
            ``k * tasks_per_step`` episodes.
        steps: GRPO optimizer steps.
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
    model: str | None = None
    tasks: tuple[int, ...] = tuple(range(64))
    k: int = 8
    tasks_per_step: int = 4
    steps: int = 150
    learning_rate: float = 5e-4
    warm_start: int = 300
    warm_start_episodes: int = 4
    warm_start_epsilon: float = 0.25
    warm_start_lr: float = 1e-2
    process_reward: float = 0.0
    seed: int = 0
    max_new_tokens: int = 8
    temperature: float = 1.0
    system_prompt: str | None = FORMAT_PROMPT
    few_shot: int = 0
    reply_format: str | None = None
    context: int = 1024
    lora: LoRASpec | None = None
    micro_batch: int | None = None
    beta: float = 0.04
    collapse_invalid: float = 0.5

    def __post_init__(self) -> None:
        for name in ("k", "tasks_per_step", "max_new_tokens", "context"):
            check_int(getattr(self, name), name, 1)
        if self.k < 2:
            raise ValueError(
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
        PromptStyle(self.few_shot, self.reply_format, self.system_prompt)  # checks all three
        if not self.tasks:
            raise ValueError("tasks must not be empty.")
        if self.micro_batch is not None and (
            isinstance(self.micro_batch, bool)
            or not isinstance(self.micro_batch, int)
            or self.micro_batch < 1
            or (self.k * self.tasks_per_step) % self.micro_batch
        ):
            raise ValueError(
                f"micro_batch must divide the {self.k * self.tasks_per_step} episodes of a "
                f"step, got {self.micro_batch!r}."
            )

    def to_json(self) -> dict[str, Any]:
        """Return the settings as a JSON-ready dict."""
        data = asdict(self)
        data[BUDGET] = self.budget.to_json()
        data["tasks"] = list(self.tasks)
        return data


# --------------------------------------------------------------------- train
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
        system_prompt=config.system_prompt,
        few_shot=config.few_shot,
        reply_format=config.reply_format,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        process_reward=config.process_reward > 0,
    )


def train_llm(
    config: LLMTrainConfig, out: str | os.PathLike[str], log: Callable[[str], None] = print
) -> Path:
    """Warm-start, train with GRPO, save the model in ``out``; return ``out``.

    ``log`` receives the short training log (one line per ``log`` step).
    """
    import datasets
    import torch
    from transformers import set_seed

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is "experimental"
    datasets.disable_progress_bars()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    set_seed(config.seed)
    model, tokenizer = load_model(config, out)
    if config.lora is not None:
        model = apply_lora(model, config.lora)
    timings: dict[str, float] = {}
    history: list[dict[str, Any]] = []
    stopped: dict[str, Any] = {}  # filled by the collapse guard when it stops GRPO

    started = time.perf_counter()
    if config.warm_start:
        model = _warm_start(model, tokenizer, config, out, log)
    timings["warm_start_seconds"] = round(time.perf_counter() - started, 1)

    started = time.perf_counter()
    if config.steps:
        model = _grpo(model, tokenizer, config, out, (history, stopped), log)
    timings["grpo_seconds"] = round(time.perf_counter() - started, 1)

    shutil.rmtree(out / "checkpoints", ignore_errors=True)  # Trainer's output_dir; saves nothing
    saved: list[Any] = []  # save_model merges a LoRA model: the merged one is kept
    save_folder(out, lambda folder: saved.append(save_model(model, Path(folder))))
    save_folder(out, tokenizer.save_pretrained)
    model = saved[0]
    sidecar = {
        "config": config.to_json(),
        "eval_command": eval_command(config, out),
        "timings": timings,
        "stopped": stopped or None,
        "log": history,
        "torch_threads": torch.get_num_threads(),
        "versions": _versions(),
    }
    atomic_write_text(out / "train_llm.json", json.dumps(sidecar, indent=2) + "\n")
    log(f"saved {out} (seconds: {timings})")
    return out


def _warm_start(
    model: Any, tokenizer: Any, config: LLMTrainConfig, out: Path, log: Callable[[str], None]
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
        output_dir=str(out / "checkpoints"),
    )


def _grpo(
    model: Any,
    tokenizer: Any,
    config: LLMTrainConfig,
    out: Path,
    records: tuple[list[dict[str, Any]], dict[str, Any]],
    log: Callable[[str], None],
) -> Any:
    """Train with GRPO on whole episodes; return the model.

    ``records`` is ``(history, stopped)``: each step's log line goes into
    ``history``, and the collapse guard fills ``stopped`` when it stops GRPO.
    """
    from datasets import Dataset
    from trl import GRPOTrainer

    from baselines.llm.rewards import outcome_reward, process_reward
    from baselines.llm.tasks import task_prompt

    rewards: list[Any] = [outcome_reward]
    if config.process_reward > 0:
        rewards.append(process_reward(config.process_reward))
    episodes = config.k * config.tasks_per_step
    micro = config.micro_batch or episodes
    args = grpo_config(
        out / "checkpoints",
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
    history, stopped = records
    _quiet(trainer, history, log, config.steps)
    trainer.add_callback(_collapse_guard(config.collapse_invalid, history, stopped, log))
    trainer.train()
    return trainer.model


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


def _quiet(trainer: Any, history: list, log: Callable[[str], None], steps: int) -> None:
    """Replace TRL's dict printing with a progress bar and one short line per step."""
    from transformers import PrinterCallback, ProgressCallback, TrainerCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    bar = _progress(steps)

    class ShortLog(TrainerCallback):
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
            history.append(entry)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(success=entry[SUCCESS], reward=entry["reward"])
            step = state.global_step
            if bar is None or step == 1 or step % 10 == 0 or step == steps:
                line = " ".join(
                    f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
                    for key, value in entry.items()
                    if value is not None
                )
                (bar.write if bar is not None else log)(line)

        def on_train_end(self, args, state, control, **kwargs):
            if bar is not None:
                bar.close()

    trainer.add_callback(ShortLog())


def _collapse_guard(
    limit: float, history: list[dict[str, Any]], stopped: dict[str, Any], log: Callable
) -> Any:
    """Return a callback that stops GRPO once the recent invalid-reply rate exceeds ``limit``."""
    from transformers import TrainerCallback

    class CollapseGuard(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            recent = [
                e["invalid"] for e in history[-COLLAPSE_WINDOW:] if e.get("invalid") is not None
            ]
            if stopped or len(recent) < COLLAPSE_WINDOW or limit >= 1:
                return
            rate = sum(recent) / len(recent)
            if rate > limit:
                stopped.update(step=state.global_step, invalid_rate=round(rate, 4), limit=limit)
                control.should_training_stop = True
                log(
                    f"collapse guard: stopped GRPO at step {state.global_step}: invalid-reply "
                    f"rate {rate:.2f} over the last {COLLAPSE_WINDOW} steps > {limit}"
                )

    return CollapseGuard()


def _progress(total: int) -> Any:
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="GRPO", unit="step")


def _versions() -> dict[str, str]:
    import importlib.metadata as metadata

    versions = {}
    for package in ("agent-envs", "torch", "transformers", "trl", "datasets"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


# ------------------------------------------------------------------ evaluate
def eval_command(config: LLMTrainConfig, out: Path, settings: Any = None) -> str:
    """Return the ``agent-envs eval`` command that evaluates the saved model on its prompts.

    With ``settings`` (the run's :class:`~agent_envs.evaluation.EvalSettings`)
    it repeats that evaluation's tasks, K grid, attempts and budgets; without,
    100 tasks from 10000, K 1,2,4, 4 attempts and the training budgets.
    """
    kwargs: dict[str, Any] = {
        "model": str(out),
        "temperature": config.temperature,
        "max_new_tokens": config.max_new_tokens,
        "prefix_cache": True,
    }
    if config.system_prompt != FORMAT_PROMPT:
        kwargs["system_prompt"] = config.system_prompt
    if config.few_shot:
        kwargs["few_shot"] = config.few_shot
    if config.reply_format is not None:
        kwargs["reply_format"] = config.reply_format
    budgets, ks, samples, tasks = sorted(set(config.budget.budgets)), (1, 2, 4), 4, "10000:10100"
    if settings is not None:
        budgets, ks, samples = settings.budgets, settings.ks, settings.samples
        tasks = _tasks_flag(settings.tasks)
    visible = " --visible-budget" if config.budget.visible else ""
    agent_kwargs = shlex.quote(json.dumps(kwargs))
    return (
        f"agent-envs eval {config.env_id} --agent hf --agent-kwargs {agent_kwargs} "
        f"--history --history-record raw{visible} --t {','.join(map(str, budgets))} "
        f"--k {','.join(map(str, ks))} --samples {samples} --tasks {tasks}"
    )


def _tasks_flag(ids: Sequence[int]) -> str:
    """Return ``--tasks``'s value for ``ids``: a range ``a:b`` when consecutive, else the ids."""
    if _consecutive(ids):
        return f"{ids[0]}:{ids[-1] + 1}"
    return ",".join(map(str, ids))


def _consecutive(ids: Sequence[int]) -> bool:
    """Return whether ``ids`` is a non-empty run ``a, a+1, ..., b``."""
    return bool(ids) and list(ids) == list(range(ids[0], ids[0] + len(ids)))


def training_agent(
    path: str | os.PathLike[str], config: LLMTrainConfig, batch_size: int = 64, seed: int = 0
) -> Any:
    """Return an ``HFAgent`` for the saved model that prompts and samples as training did."""
    from baselines.llm.hf_agent import HFAgent

    return HFAgent(
        str(path),
        system_prompt=config.system_prompt,
        few_shot=config.few_shot,
        reply_format=config.reply_format,
        env_id=config.env_id,
        temperature=config.temperature,
        max_new_tokens=config.max_new_tokens,
        batch_size=batch_size,
        seed=seed,
        device="cpu",
        prefix_cache=True,  # the same samples, several times faster on long histories
    )


def evaluate_model(
    path: str | os.PathLike[str],
    config: LLMTrainConfig,
    *,
    budgets: Sequence[int],
    tasks: Sequence[int],
    samples: int = 4,
    ks: Sequence[int] = (1, 2, 4),
    seed: int = 0,
    batch_size: int = 64,
    log_path: str | os.PathLike[str] | None = None,
    progress: bool = False,
    step_quality: int = 0,
    step_quality_seed: int = 0,
) -> Any:
    """Evaluate the saved model with ``evaluate`` on the training prompt format.

    The env stack is training's (:data:`baselines.llm.rollout.TRAINING_STACK`:
    ``ChatHistory(record="raw")`` outside the budget) and the agent an
    ``HFAgent`` with the training settings, so every prompt is built as in
    training.  ``step_quality`` also judges the
    model on that many shared reference states per task, drawn with
    ``step_quality_seed`` (the study's, never the training seed, so every seed
    meets the same states).  Returns the :class:`agent_envs.evaluation.EvalResult`.
    """
    from agent_envs.env_stack import StackRecipe
    from agent_envs.evaluation import evaluate
    from baselines.llm.rollout import TRAINING_STACK

    agent = training_agent(path, config, batch_size, seed)
    visible = config.budget.visible
    extra = {"step_quality": step_quality, "step_quality_seed": step_quality_seed}
    return evaluate(
        agent,
        StackRecipe(config.env_id, TRAINING_STACK),
        ks=[k for k in ks if k <= samples],
        budgets=budgets,
        tasks=list(tasks),
        samples=samples,
        seed=seed,
        visible_budget=visible,
        batch_size=batch_size,
        log_path=log_path,
        progress=progress,
        agent_name=f"hf {Path(path).name}",
        env_name=config.env_id,
        **extra,
    )


# ----------------------------------------------------------------------- CLI
_PROG = "agent-envs train-llm"


def build_parser() -> tuple[Parser, EvalArguments, BudgetArguments]:
    """Return the ``train-llm`` argument parser and the readers of its shared flags."""
    parser = Parser(
        prog=_PROG,
        description="Train a causal LM on whole episodes: noisy-oracle warm start, then GRPO "
        "(TRL) under a fixed turn budget or a BudgetMix.",
    )
    parser.add_argument("env_id", help="a registered id, e.g. agent_envs/GuessNumber-v0")
    parser.add_argument(
        "--model",
        default=None,
        help="a local HF folder, a .gguf file or smollm2-135m (default: the tiny model)",
    )
    budget = add_budget_arguments(parser, default=8)
    parser.add_argument(
        "--independent-budgets",
        action="store_true",
        help="each attempt draws its own T (default: the K attempts of a task share one)",
    )
    parser.add_argument(
        "--group-size", type=int_arg(2), default=8, help="GRPO's K: attempts per task (8)"
    )
    deprecated(parser, "--k", "--group-size", type=int_arg(2))
    parser.add_argument(
        "--tasks", default="64", help="training task ids: count (64 = ids 0..63), a:b or ids"
    )
    number = int_arg(1)
    parser.add_argument("--tasks-per-step", type=number, default=4, help="groups per step (4)")
    parser.add_argument("--warm-start", type=int_arg(0), default=300, help="steps (0: none)")
    parser.add_argument("--steps", type=int_arg(0), default=150, help="GRPO steps (150)")
    parser.add_argument("--lr", type=number_arg(0, open_low=True), default=5e-4, help="(5e-4)")
    parser.add_argument(
        "--beta", type=number_arg(0), default=0.04, help="KL penalty to the warm start (0.04)"
    )
    parser.add_argument(
        "--collapse-invalid",
        type=number_arg(0, 1, open_low=True),
        default=0.5,
        help="stop GRPO once the invalid-reply rate over 5 steps exceeds this (0.5; 1: never)",
    )
    parser.add_argument(
        "--process-reward", type=number_arg(0), default=0.0, help="its coefficient (0: off)"
    )
    parser.add_argument("--seed", type=int_arg(0), default=0, help="seed (0)")
    _add_prompt_arguments(parser)
    parser.add_argument(
        "--context", type=number, default=1024, help="the tiny model's context in tokens (1024)"
    )
    _add_lora_arguments(parser)
    parser.add_argument("--out", default=None, help="output folder")
    add_run_folder_flags(parser)
    parser.add_argument("--threads", type=number, default=1, help="torch threads (1; see docs)")
    parser.add_argument("--quick", action="store_true", help="a few steps of everything")
    return parser, _add_evaluation(parser), budget


def _add_prompt_arguments(parser: Parser) -> None:
    """Add how the model is prompted and sampled, in training and evaluation alike."""
    number = int_arg(1)
    parser.add_argument("--max-new-tokens", type=number, default=8, help="tokens per reply (8)")
    parser.add_argument(
        "--temperature",
        type=number_arg(0, open_low=True),
        default=1.0,
        help="sampling temperature, in training and evaluation (1.0)",
    )
    parser.add_argument(
        "--few-shot",
        type=int_arg(0, EXAMPLE_POOL),
        default=0,
        help="oracle episodes shown before each real one, in training and evaluation (0)",
    )
    parser.add_argument(
        "--reply-format",
        choices=REPLY_FORMATS,
        default=None,
        help="'action' (the bare action) or 'think' (default: action with --few-shot)",
    )


def _add_lora_arguments(parser: Parser) -> None:
    """Add what a large model needs to train in memory: LoRA adapters and micro-batches."""
    parser.add_argument(
        "--lora",
        type=int,
        default=0,
        metavar="R",
        help="train LoRA adapters of rank R only (0: full fine-tuning); saved merged",
    )
    parser.add_argument("--lora-alpha", type=float, default=None, help="LoRA alpha (2*R)")
    parser.add_argument(
        "--lora-dropout", type=float, default=0.0, help="LoRA dropout, warm start only (0)"
    )
    parser.add_argument(
        "--lora-targets",
        default=None,
        help="modules that get adapters, e.g. q_proj,k_proj,v_proj,o_proj "
        "(default: peft's for the architecture: q_proj,v_proj for Llama/Qwen2)",
    )
    parser.add_argument(
        "--lora-layers",
        type=int,
        default=None,
        help="adapt only the last N layers (default: all); the backward stops there",
    )
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        help="episodes per forward/backward of the GRPO update (default: the whole step)",
    )


def _add_evaluation(parser: Parser) -> EvalArguments:
    """Add the evaluation flags, shared with ``train-sb3`` (``--eval-tasks 0`` skips it)."""
    evaluation = parser.add_argument_group("evaluation (--eval-tasks 0 skips it)")
    flags = add_eval_arguments(
        evaluation,
        prefix="eval-",
        k=None,
        t=None,
        unset={"k": "1,2,4 up to the attempts per task", "t": "the training budgets"},
        samples=4,
        tasks="100",
        first=EVAL_FIRST_TASK,
    )
    deprecated(evaluation, "--t", "--eval-budgets", type=int_list(None))
    return flags


def config_from_args(args: argparse.Namespace, budget: BudgetArguments) -> LLMTrainConfig:
    """Build the run's settings from parsed arguments."""
    spec = BudgetSpec.from_regime(budget.regime(args), not args.independent_budgets)
    tasks = check_tasks(parse_tasks(args.tasks, "--tasks"))
    config = LLMTrainConfig(
        lora=_lora_spec(args),
        micro_batch=args.micro_batch,
        env_id=args.env_id,
        budget=spec,
        model=args.model,
        tasks=tasks,
        k=args.group_size,
        tasks_per_step=args.tasks_per_step,
        steps=args.steps,
        learning_rate=args.lr,
        warm_start=args.warm_start,
        process_reward=args.process_reward,
        seed=args.seed,
        max_new_tokens=args.max_new_tokens,
        few_shot=args.few_shot,
        reply_format=args.reply_format,
        temperature=args.temperature,
        context=args.context,
        beta=args.beta,
        collapse_invalid=args.collapse_invalid,
    )
    if args.quick:
        config = replace(
            config,
            tasks=tasks[: QUICK["tasks"]],
            k=QUICK["k"],
            tasks_per_step=1,
            steps=QUICK["steps"],
            warm_start=min(config.warm_start, QUICK["warm_start"]),
            warm_start_episodes=1,
        )
    return config


def _lora_spec(args: argparse.Namespace) -> LoRASpec | None:
    """Return the ``--lora*`` flags as a :class:`LoRASpec` (``None`` without ``--lora``)."""
    if args.lora == 0:
        extras = (args.lora_alpha, args.lora_targets, args.lora_layers)
        if any(value is not None for value in extras) or args.lora_dropout:
            raise UsageError(
                "--lora-alpha, --lora-dropout, --lora-targets and --lora-layers go with --lora R."
            )
        return None
    targets = None
    if args.lora_targets is not None:
        targets = tuple(name.strip() for name in args.lora_targets.split(","))
    return LoRASpec(args.lora, args.lora_alpha, args.lora_dropout, targets, args.lora_layers)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``train-llm`` command; return the exit status."""
    return run_command(_PROG, _main, argv, extra="rl")


def _eval_settings(args: argparse.Namespace, flags: EvalArguments, config: LLMTrainConfig) -> Any:
    """Return the evaluation's settings, checked before training (``None``: no evaluation)."""
    if args.eval_tasks == "0":
        return None
    if args.quick:
        args.eval_samples = QUICK["eval_samples"]
    if args.eval_k is None:
        args.eval_k = tuple(k for k in (1, 2, 4) if k <= args.eval_samples)
    settings = flags.settings(args, budgets=sorted(set(config.budget.budgets)), seed=config.seed)
    if args.quick:
        settings = settings.resolved(tasks=settings.tasks[: QUICK["eval_tasks"]])
    overlap = set(settings.tasks) & set(config.tasks)
    if overlap:
        print(
            f"warning: {len(overlap)} evaluation task ids are also training ids; "
            "the evaluation is not held out.",
            file=sys.stderr,
        )
    return settings


def _main(argv: list[str]) -> int:
    import agent_envs

    parser, flags, budget = build_parser()
    args = parser.parse_args(argv)
    if args.env_id not in agent_envs.env_ids():
        raise UsageError(f"unknown env id {args.env_id!r}; run `agent-envs list` for the ids")
    config = config_from_args(args, budget)
    settings = _eval_settings(args, flags, config)
    out, trained = _run_folder(args, config)
    import torch

    torch.set_num_threads(args.threads)  # 2 threads on 2 shared cores swung 0.45 s to 20 s
    eval_tasks = settings.tasks if settings is not None else ()
    print(
        f"training on {config.env_id}, {config.budget.describe()}, {len(config.tasks)} "
        f"training tasks ({_span(config.tasks)}), evaluation tasks {_span(eval_tasks) or 'none'}"
    )
    try:
        if not trained:
            train_llm(config, out)
        if settings is not None:
            _evaluate_into(out, config, settings)
    except KeyboardInterrupt:
        print(
            f"agent-envs train-llm: interrupted. {out} keeps the model if its training "
            "finished (train_llm.json says so) and the evaluation episodes that finished; "
            "rerun the same command with --resume to reuse them (training that was cut off "
            "starts again).",
            file=sys.stderr,
        )
        return 130
    print(f"evaluate again with:\n  {eval_command(config, out, settings)}")
    return 0


def _evaluate_into(out: Path, config: LLMTrainConfig, settings: Any) -> None:
    """Evaluate the model saved in ``out``; its log ``out/episodes.jsonl`` lets --resume go on."""
    result = evaluate_model(
        out,
        config,
        budgets=settings.budgets,
        tasks=settings.tasks,
        samples=settings.samples,
        ks=settings.ks,
        seed=config.seed,
        log_path=out / "episodes.jsonl",
    )
    print(result.table())
    result.save(out / "result.json")
    print(f"wrote {out / 'result.json'}")


#: What train-llm writes in --out besides the model's own files.
RUN_FILES = ("train_llm.json", "result.json", "episodes.jsonl")


def _run_folder(args: argparse.Namespace, config: LLMTrainConfig) -> tuple[Path, bool]:
    """Check ``--out`` before any work; return it and whether --resume found the model trained.

    A folder that holds files is refused unless ``--resume`` (reuse a model
    trained with the same settings) or ``--overwrite`` (its run files go
    first; the model's own files are replaced whole when the new one is saved).
    """
    from agent_envs.files import prepare_run_folder

    default = Path("runs/llm") / (
        f"{config.env_id.split('/')[-1]}-{config.budget.describe()}-seed{config.seed}"
    )
    try:
        out = prepare_run_folder(
            default if args.out is None else args.out,
            RUN_FILES,
            resume=args.resume,
            overwrite=args.overwrite,
        )
    except ValueError as error:
        raise UsageError(str(error)) from None
    sidecar = out / "train_llm.json"
    if not (args.resume and sidecar.is_file()):
        return out, False
    try:
        saved = json.loads(sidecar.read_text(encoding="utf-8")).get("config")
    except (OSError, ValueError, AttributeError):
        saved = None
    wanted = json.loads(json.dumps(config.to_json()))
    if saved != wanted:
        changed = sorted(key for key in wanted if (saved or {}).get(key) != wanted[key])
        raise UsageError(
            f"--resume: the model in {out} was trained with other settings "
            f"({', '.join(changed) or 'unreadable train_llm.json'}); rerun with those "
            "settings, pass --overwrite to replace it, or use another --out."
        )
    return out, True


def _span(ids: Sequence[int]) -> str:
    if not ids:
        return ""
    if _consecutive(ids):
        return f"ids {ids[0]}..{ids[-1]}"
    return f"{len(ids)} ids"


if __name__ == "__main__":
    sys.exit(main())
