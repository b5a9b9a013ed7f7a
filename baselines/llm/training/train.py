"""Train a causal LM on whole episodes of an agent_envs env: warm start, then GRPO.

The command ``train-llm`` (:class:`LLMCommand`, on the training-command
skeleton :class:`baselines.command.TrainingCommand`) and :func:`train_llm`.
The settings are :mod:`baselines.llm.training.train_config` (each flag beside
its field), the GRPO wiring :mod:`baselines.llm.training.grpo`, and the
evaluation of the trained model
:mod:`baselines.llm.training.post_training_eval`.  Run it through the package
CLI or as a script::

    agent-envs train-llm agent_envs/GuessNumber-v0 --budget-mix 4,6,8,12 \\
        --warm-start 300 --steps 150 --out runs/guess-mix
    python -m baselines.llm.training.train agent_envs/GuessNumber-v0 --quick

Without ``--model`` it trains the built-in tiny model
(:mod:`baselines.llm.models.tiny`) from scratch.  The run folder holds ``model/``
(the model and tokenizer, which ``from_pretrained`` and ``--agent hf``
load, and ``train_llm.json``: every setting, the exact evaluation command,
the training log), the marker ``agent_envs_run.json`` and, unless
``--eval-tasks 0``, ``result.json`` (the Pass@(K,T) surface on the
evaluation tasks) and its log ``episodes.jsonl``.

Task ids.  Training uses ``--tasks`` (default ids ``0..63``); evaluation uses
``--eval-tasks`` (default ids ``10000..10099``), disjoint from the training ids
unless you make them overlap (then a warning says so).

Needs the ``[rl]`` extra (TRL, datasets, transformers, torch).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_envs import arguments as cli
from agent_envs.files import add_run_folder_flags, atomic_write_text, read_json_input, save_folder
from baselines.command import TrainingCommand, base_parser, check_same_settings, versions
from baselines.llm.models.lora import LoRASpec, apply_lora, save_model
from baselines.llm.prompting.few_shot import check_not_example_instance
from baselines.llm.training.post_training_eval import (
    eval_command,
    evaluate_into,
    evaluate_model,
    id_span,
)
from baselines.llm.training.train_config import (
    COLLAPSE_WINDOW,
    EVAL_FIRST_TASK,
    QUICK,
    LLMTrainConfig,
)

__all__ = [
    "COLLAPSE_WINDOW",
    "COMMAND",
    "EVAL_FIRST_TASK",
    "LLMTrainConfig",
    "build_parser",
    "eval_command",
    "evaluate_model",
    "main",
    "train_llm",
]

#: The packages whose versions ``train_llm.json`` records.
PACKAGES = ("agent-envs", "torch", "transformers", "trl", "datasets")
#: The modules training imports (from the ``[rl]`` extra), checked before ``--out`` is written.
_IMPORTS = ("torch", "transformers", "trl", "datasets")
#: Where a model lives in its run folder: its own subfolder, apart from other files.
MODEL = "model/"


# --------------------------------------------------------------------- train
def train_llm(
    config: LLMTrainConfig, out: str | os.PathLike[str], log: Callable[[str], None] = print
) -> Path:
    """Warm-start, train with GRPO, save the model in ``out``; return ``out``.

    The pipeline reads top down: each phase is handed its own settings object whole
    (``config.source``, ``config.rollout``, ``config.warm``, ``config.grpo``), built and
    checked with the config.  ``out`` gets the model, its tokenizer and ``train_llm.json``
    (and ``base/``, the tiny model trained from, and ``adapter/``, a LoRA run's adapters
    alone); the Trainer works in a scratch folder of its own, removed afterwards.  ``log``
    receives the short training log (one line per step).
    """
    import datasets
    import torch
    from transformers import set_seed

    from baselines.llm.training.grpo import GRPOLog, remove_scratch, scratch_folder, train_grpo
    from baselines.llm.training.rollout import EpisodeRollout
    from baselines.llm.training.warm_start import run_warm_start

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is "experimental"
    datasets.disable_progress_bars()
    out = Path(out)
    timings: dict[str, float] = {}
    warm, grpo = config.warm, config.grpo
    scratch = scratch_folder(out)
    try:
        set_seed(config.seed)
        model, tokenizer = config.source.load(out)
        if config.lora is not None:  # the frozen base in its dtype; the adapters float32
            model = apply_lora(model.to(getattr(torch, config.compute_dtype())), config.lora)
        started = time.perf_counter()
        if warm.steps:  # each phase plays a rollout of its own, from the same seeds
            rollout = EpisodeRollout(config.rollout)
            model = run_warm_start(model, tokenizer, rollout, warm, scratch, log)
        timings["warm_start_seconds"] = round(time.perf_counter() - started, 1)
        progress = GRPOLog(grpo.steps, grpo.collapse_invalid, log)  # its bar starts with GRPO
        started = time.perf_counter()
        if grpo.steps:
            rollout = EpisodeRollout(config.rollout)
            model = train_grpo(model, tokenizer, rollout, grpo, scratch, progress)
        timings["grpo_seconds"] = round(time.perf_counter() - started, 1)
    finally:
        remove_scratch(scratch)
    saved: list[Any] = []  # save_model merges a LoRA model: the merged one is kept
    save_folder(out, lambda folder: saved.append(save_model(model, Path(folder))))
    save_folder(out, tokenizer.save_pretrained)
    sidecar = {
        "config": config.to_json(),
        "eval_command": eval_command(config, out),
        "compute_dtype": config.compute_dtype(),
        "timings": timings,
        "stopped": progress.stopped or None,
        "log": progress.history,
        "torch_threads": torch.get_num_threads(),
        "versions": versions(PACKAGES),
    }
    atomic_write_text(out / "train_llm.json", json.dumps(sidecar, indent=2) + "\n")
    log(f"saved {out} (seconds: {timings})")
    return out


# ----------------------------------------------------------------------- CLI
class LLMCommand(TrainingCommand):
    """``agent-envs train-llm``: warm-start and GRPO-train one model, then evaluate it."""

    prog = "agent-envs train-llm"
    extra = "rl"
    model_files = (MODEL,)
    eval_files = ("result.json", "episodes.jsonl")

    def build_parser(self) -> cli.Parser:
        return build_parser()

    def configs(self, args: argparse.Namespace) -> list[LLMTrainConfig]:
        config = LLMTrainConfig(
            **cli.config_values(LLMTrainConfig, args),
            env_id=args.env_id,
            budget=cli.budget_regime(args, shared=not args.independent_budgets),
            lora=_lora_spec(args),
        )
        if args.quick:  # a flag given explicitly wins over --quick's value, as in train-sb3
            quick = {
                "tasks": config.tasks[: QUICK["tasks"]],
                "k": QUICK["k"],
                "tasks_per_step": 1,
                "steps": QUICK["steps"],
                "warm_start": min(config.warm_start, QUICK["warm_start"]),
                "warm_start_episodes": 1,
            }
            config = replace(config, **{n: v for n, v in quick.items() if n not in args.given})
        return [config]

    def run_layout(self, args: argparse.Namespace, configs: list[Any]) -> tuple[Any, list[str]]:
        config = configs[0]
        name = f"{config.env_id.split('/')[-1]}-{config.budget.describe()}-seed{config.seed}"
        return (Path("runs/llm") / name if args.out is None else args.out), [""]

    def settings_json(self, configs: list[LLMTrainConfig]) -> Any:
        return configs[0].to_json()

    def evaluation(self, args: argparse.Namespace, config: LLMTrainConfig) -> Any:
        settings = _eval_settings(args, config)
        if config.few_shot:  # refused now, in one line, rather than at the first step
            eval_ids = settings.tasks if settings is not None else ()
            check_not_example_instance(config.env_id, config.few_shot, (*config.tasks, *eval_ids))
        return settings

    def check_inputs(self, args: argparse.Namespace, configs: list[LLMTrainConfig]) -> None:
        """Refuse a missing package or a model that cannot load before ``--out`` is written."""
        for config in configs:
            config.source.check()
            needed = _IMPORTS + (("peft",) if config.lora is not None else ())
            missing = [name for name in needed if importlib.util.find_spec(name) is None]
            if missing:
                raise ModuleNotFoundError(f"train-llm needs {', '.join(missing)}", name=missing[0])

    def trained(self, config: LLMTrainConfig, out: Path) -> Path | None:
        sidecar = out / MODEL / "train_llm.json"
        if not sidecar.is_file():
            return None  # not trained, or cut off before its sidecar: trained again
        try:
            saved = read_json_input(sidecar, "model settings").get("config")
        except (ValueError, AttributeError):
            saved = None
        check_same_settings(saved, config.to_json(), f"the model in {out / MODEL}")
        return out / MODEL

    def train(self, config: LLMTrainConfig, out: Path) -> Path:
        import torch

        torch.set_num_threads(self.threads)  # 2 threads on 2 shared cores swung 0.45 s to 20 s
        return train_llm(config, out / MODEL)

    def evaluate(self, args, config, settings, model, out) -> None:  # type: ignore[override]
        import torch

        torch.set_num_threads(self.threads)
        evaluate_into(model, out, config, settings)

    def started(self, args: argparse.Namespace, configs: list[Any], plans: list[Any]) -> None:
        config, settings = configs[0], plans[0]
        self.threads = args.threads
        eval_tasks = settings.tasks if settings is not None else ()
        print(
            f"training on {config.env_id}, {config.budget.describe()}, {len(config.tasks)} "
            f"training tasks ({id_span(config.tasks)}), evaluation tasks "
            f"{id_span(eval_tasks) or 'none'}"
        )
        if not config.steps:  # a defined run, not a slip: say what it does instead of GRPO
            start = "the warm-started model" if config.warm_start else "the starting model as given"
            print(f"--steps 0: no GRPO; {start} is saved and evaluated")

    def finished(self, args, configs, folder, plans) -> None:  # type: ignore[override]
        print(f"evaluate again with:\n  {eval_command(configs[0], folder / MODEL, plans[0])}")


def build_parser() -> cli.Parser:
    """Return the ``train-llm`` argument parser."""
    parser = base_parser(
        LLMCommand.prog,
        "Train a causal LM on whole episodes: noisy-oracle warm start, then GRPO (TRL) under "
        "a fixed turn budget or a BudgetMix.",
        "agent_envs/GuessNumber-v0",
        budget=8,
    )
    parser.add_argument(
        "--independent-budgets",
        action="store_true",
        help="each attempt draws its own T (default: the K attempts of a task share one)",
    )
    cli.add_config_arguments(parser, LLMTrainConfig)
    _add_lora_arguments(parser)
    parser.add_argument(
        "--out", default=None, help="run folder (default runs/llm/<env>-<regime>-seed<seed>)"
    )
    add_run_folder_flags(parser)
    parser.add_argument(
        "--threads", type=cli.int_arg(1), default=1, help="torch threads (1; see docs)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a few steps of everything (flags given explicitly still count)",
    )
    parser.set_defaults(eval_flags=_add_evaluation(parser))
    return parser


def _add_lora_arguments(parser: cli.Parser) -> None:
    """Add the LoRA adapters a large model needs to train in memory (``--micro-batch`` too)."""
    parser.add_argument(
        "--lora",
        type=cli.int_arg(0),
        default=0,
        metavar="R",
        help="train LoRA adapters of rank R only (0: full fine-tuning); saved merged",
    )
    parser.add_argument(
        "--lora-alpha",
        type=cli.number_arg(0, open_low=True),
        default=None,
        help="LoRA alpha (2*R)",
    )
    parser.add_argument(
        "--lora-dropout",
        type=cli.number_arg(0, 1),
        default=0.0,
        help="LoRA dropout in [0, 1), warm start only (0)",
    )
    parser.add_argument(
        "--lora-targets",
        default=None,
        help="modules that get adapters, e.g. q_proj,k_proj,v_proj,o_proj "
        "(default: peft's for the architecture: q_proj,v_proj for Llama/Qwen2)",
    )
    parser.add_argument(
        "--lora-layers",
        type=cli.int_arg(1),
        default=None,
        help="adapt only the last N layers (default: all); the backward stops there",
    )


def _add_evaluation(parser: cli.Parser) -> cli.EvalArguments:
    """Add the evaluation flags, shared with ``train-sb3`` (``--eval-tasks 0`` skips it)."""
    evaluation = parser.add_argument_group("evaluation (--eval-tasks 0 skips it)")
    flags = cli.add_eval_arguments(
        evaluation,
        prefix="eval-",
        k=None,
        t=None,
        unset={"k": "1,2,4 up to the attempts per task", "t": "the training budgets"},
        samples=4,
        tasks="100",
        first=EVAL_FIRST_TASK,
    )
    return flags


def _lora_spec(args: argparse.Namespace) -> LoRASpec | None:
    """Return the ``--lora*`` flags as a :class:`LoRASpec` (``None`` without ``--lora``)."""
    if args.lora == 0:
        extras = (args.lora_alpha, args.lora_targets, args.lora_layers)
        if any(value is not None for value in extras) or args.lora_dropout:
            raise cli.UsageError(
                "--lora-alpha, --lora-dropout, --lora-targets and --lora-layers go with --lora R."
            )
        return None
    if args.lora_dropout >= 1:  # a closed bound is all number_arg offers; 1 drops everything
        raise cli.UsageError(f"--lora-dropout must be below 1, got {args.lora_dropout}.")
    targets = None
    if args.lora_targets is not None:
        targets = tuple(name.strip() for name in args.lora_targets.split(","))
        if not all(targets):
            raise cli.UsageError(
                "--lora-targets takes module names such as q_proj,v_proj, "
                f"got {args.lora_targets!r}."
            )
    return LoRASpec(args.lora, args.lora_alpha, args.lora_dropout, targets, args.lora_layers)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``train-llm`` command; return the exit status."""
    return COMMAND.main(argv)


def _eval_settings(args: argparse.Namespace, config: LLMTrainConfig) -> Any:
    """Return the evaluation's settings, checked before training (``None``: no evaluation)."""
    if args.eval_tasks == "0":
        return None
    if args.quick and "eval_samples" not in args.given:
        args.eval_samples = QUICK["eval_samples"]
    if args.eval_k is None:
        args.eval_k = tuple(k for k in (1, 2, 4) if k <= args.eval_samples)
    settings = args.eval_flags.settings(
        args, budgets=sorted(set(config.budget.budgets)), seed=config.seed
    )
    if args.quick and "eval_tasks" not in args.given:
        settings = settings.resolved(tasks=settings.tasks[: QUICK["eval_tasks"]])
    overlap = set(settings.tasks) & set(config.tasks)
    if overlap:
        print(
            f"warning: {len(overlap)} evaluation task ids are also training ids; "
            "the evaluation is not held out.",
            file=sys.stderr,
        )
    return settings


#: The ``train-llm`` command.
COMMAND = LLMCommand()

if __name__ == "__main__":
    sys.exit(main())
