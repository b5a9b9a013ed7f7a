"""Train a causal LM on whole episodes of an agent_envs env: warm start, then GRPO.

The command ``train-llm`` (:class:`LLMCommand`, on the training-command
skeleton :class:`baselines.command.TrainingCommand`), :func:`train_llm`, and
the evaluation of a trained model.  The settings are
:mod:`baselines.llm.train_config` (each flag beside its field) and the GRPO
wiring :mod:`baselines.llm.grpo`.  Run it through the package CLI or as a
script::

    agent-envs train-llm agent_envs/GuessNumber-v0 --budget-mix 4,6,8,12 \\
        --warm-start 300 --steps 150 --out runs/guess-mix
    python -m baselines.llm.train agent_envs/GuessNumber-v0 --quick

Without ``--model`` it trains the built-in tiny model
(:mod:`baselines.llm.tiny`) from scratch.  The run folder holds ``model/``
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
import importlib
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_envs import arguments as cli
from agent_envs.files import add_run_folder_flags, atomic_write_text
from baselines.command import TrainingCommand, base_parser, check_same_settings, versions
from baselines.llm.budget_spec import BudgetSpec
from baselines.llm.few_shot import check_not_example_instance
from baselines.llm.lora import LoRASpec, apply_lora, save_model
from baselines.llm.prompting import FORMAT_PROMPT
from baselines.llm.train_config import COLLAPSE_WINDOW, EVAL_FIRST_TASK, QUICK, LLMTrainConfig

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

#: Names that moved to :mod:`baselines.llm.grpo`; still importable from here.
_MOVED = ("CPU_SAFE_GRPO", "grpo_config", "load_model", "make_rollout", "save_folder")
#: The packages whose versions ``train_llm.json`` records.
PACKAGES = ("agent-envs", "torch", "transformers", "trl", "datasets")
#: Where a model lives in its run folder: its own subfolder, apart from other files.
MODEL = "model/"


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return getattr(importlib.import_module("baselines.llm.grpo"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------- train
def train_llm(
    config: LLMTrainConfig, out: str | os.PathLike[str], log: Callable[[str], None] = print
) -> Path:
    """Warm-start, train with GRPO, save the model in ``out``; return ``out``.

    ``out`` gets the model, its tokenizer and ``train_llm.json`` (and
    ``base/``, the tiny model trained from); the Trainer works in a scratch
    folder of its own, removed afterwards.  ``log`` receives the short
    training log (one line per ``log`` step).
    """
    import datasets
    import torch
    from transformers import set_seed

    from baselines.llm import grpo

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is "experimental"
    datasets.disable_progress_bars()
    out = Path(out)
    scratch = grpo.scratch_folder(out)
    try:
        set_seed(config.seed)
        model, tokenizer = grpo.load_model(config, out)
        if config.lora is not None:
            model = apply_lora(model, config.lora)
        model, timings, progress = _train_phases(model, tokenizer, config, scratch, log)
    finally:
        grpo.remove_scratch(scratch)
    saved: list[Any] = []  # save_model merges a LoRA model: the merged one is kept
    grpo.save_folder(out, lambda folder: saved.append(save_model(model, Path(folder))))
    grpo.save_folder(out, tokenizer.save_pretrained)
    sidecar = {
        "config": config.to_json(),
        "eval_command": eval_command(config, out),
        "timings": timings,
        "stopped": progress.stopped or None,
        "log": progress.history,
        "torch_threads": torch.get_num_threads(),
        "versions": versions(PACKAGES),
    }
    atomic_write_text(out / "train_llm.json", json.dumps(sidecar, indent=2) + "\n")
    log(f"saved {out} (seconds: {timings})")
    return out


def _train_phases(
    model: Any, tokenizer: Any, config: LLMTrainConfig, scratch: Path, log: Callable[[str], None]
) -> tuple[Any, dict[str, float], Any]:
    """Run the warm start, then GRPO; return the model, the timings and GRPO's log."""
    from baselines.llm import grpo

    timings: dict[str, float] = {}
    progress = grpo.GRPOLog(config.steps, config.collapse_invalid, log)
    started = time.perf_counter()
    if config.warm_start:
        model = grpo.warm_start_model(model, tokenizer, config, scratch, log)
    timings["warm_start_seconds"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    if config.steps:
        model = grpo.run_grpo(model, tokenizer, config, scratch, progress)
    timings["grpo_seconds"] = round(time.perf_counter() - started, 1)
    return model, timings, progress


# ------------------------------------------------------------------ evaluate
def eval_command(config: LLMTrainConfig, out: Path, settings: Any = None) -> str:
    """Return the ``agent-envs eval`` command that evaluates the saved model on its prompts.

    With ``settings`` (the run's :class:`~agent_envs.evaluation.EvalSettings`)
    it repeats that evaluation's tasks, K grid, attempts and budgets; without,
    100 tasks from 10000, K 1,2,4, 4 attempts and the training budgets.
    """
    kwargs: dict[str, Any] = {"model": str(out), "prefix_cache": True}
    # The settings the run's policies took; HFAgent's defaults are left out of the line.
    defaults = {"system_prompt": FORMAT_PROMPT, "few_shot": 0, "reply_format": None}
    for name, value in config.policy_settings().items():
        if name not in defaults or value != defaults[name]:
            kwargs[name] = value
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
        env_id=config.env_id,
        batch_size=batch_size,
        seed=seed,
        device="cpu",
        prefix_cache=True,  # the same samples, several times faster on long histories
        **config.policy_settings(),
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
class LLMCommand(TrainingCommand):
    """``agent-envs train-llm``: warm-start and GRPO-train one model, then evaluate it."""

    prog = "agent-envs train-llm"
    extra = "rl"
    model_files = (MODEL,)
    eval_files = ("result.json", "episodes.jsonl")

    def build_parser(self) -> cli.Parser:
        return build_parser()

    def configs(self, args: argparse.Namespace) -> list[LLMTrainConfig]:
        spec = BudgetSpec.from_regime(args.budget_flags.regime(args), not args.independent_budgets)
        config = LLMTrainConfig(
            **cli.config_values(LLMTrainConfig, args),
            env_id=args.env_id,
            budget=spec,
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

    def trained(self, config: LLMTrainConfig, out: Path) -> Path | None:
        sidecar = out / MODEL / "train_llm.json"
        if not sidecar.is_file():
            return None  # not trained, or cut off before its sidecar: trained again
        try:
            saved = json.loads(sidecar.read_text(encoding="utf-8")).get("config")
        except (OSError, ValueError, AttributeError):
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
        _evaluate_into(model, out, config, settings)

    def started(self, args: argparse.Namespace, configs: list[Any], plans: list[Any]) -> None:
        config, settings = configs[0], plans[0]
        self.threads = args.threads
        eval_tasks = settings.tasks if settings is not None else ()
        print(
            f"training on {config.env_id}, {config.budget.describe()}, {len(config.tasks)} "
            f"training tasks ({_span(config.tasks)}), evaluation tasks "
            f"{_span(eval_tasks) or 'none'}"
        )

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
    cli.deprecated(parser, "--k", "--group-size", type=cli.int_arg(2))
    _add_lora_arguments(parser)
    parser.add_argument("--out", default=None, help="output folder")
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
    cli.deprecated(evaluation, "--t", "--eval-budgets", type=cli.int_list(None))
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
    targets = None
    if args.lora_targets is not None:
        targets = tuple(name.strip() for name in args.lora_targets.split(","))
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


def _evaluate_into(model: Path, out: Path, config: LLMTrainConfig, settings: Any) -> None:
    """Evaluate the model saved in ``model``; its log ``out/episodes.jsonl`` lets --resume go on."""
    result = evaluate_model(
        model,
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


def _span(ids: Sequence[int]) -> str:
    if not ids:
        return ""
    if _consecutive(ids):
        return f"ids {ids[0]}..{ids[-1]}"
    return f"{len(ids)} ids"


#: The ``train-llm`` command.
COMMAND = LLMCommand()

if __name__ == "__main__":
    sys.exit(main())
