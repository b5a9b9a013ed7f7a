"""The ``train-sb3`` command: its flags, its settings per seed and its evaluation.

Run it through the package CLI or as a script::

    agent-envs train-sb3 agent_envs/FrozenLake-8x8-v0 --algo maskable_ppo \\
        --timesteps 60000 --budget-mix 5,10,20,40 --out runs/lake-mix
    python -m baselines.sb3.train agent_envs/FrozenLake-v0 --quick

Training draws a fresh task for every episode from task ids ``--train-first F``
upward (default: tuned), unless ``--train-tasks N`` restricts it to task ids
``F..F+N-1``; evaluation uses task ids from ``--eval-first`` (default 0), so
evaluation ids below ``F`` are held-out tasks.  Training and saving are
:mod:`baselines.sb3.training`.

The skeleton (run folder, ``--resume``/``--overwrite``, Ctrl-C,
train-then-evaluate) is :class:`baselines.command.TrainingCommand`'s; the
settings that are plain flags are :class:`~baselines.sb3.env.TrainConfig`'s
fields (:func:`agent_envs.arguments.add_config_arguments`).  Each model is
saved in ``model/`` of its run folder (``seed<N>/model/`` with several seeds),
apart from the result and the log, so it never mixes with other files.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs.arguments import (
    Parser,
    UsageError,
    add_config_arguments,
    add_eval_arguments,
    budget_regime,
    config_values,
    int_arg,
    int_list,
    json_object,
    parse_tasks,
)
from agent_envs.files import add_run_folder_flags
from baselines.command import TrainingCommand, base_parser, check_same_settings
from baselines.sb3.defaults import cli_algo_kwargs, cli_encoding, tuned
from baselines.sb3.env import TrainConfig, make_env
from baselines.sb3.training import (
    HYPERPARAMETERS,
    LSTM_HIDDEN,
    config_json,
    evaluate_model,
    save_with_sidecar,
    train,
)
from wrappers.protocol import TASK_ID, Oracle
from wrappers.text_encoder import MODES
from wrappers.utils.validators import check_number

__all__ = [
    "COMMAND",
    "HYPERPARAMETERS",
    "TrainConfig",
    "build_parser",
    "check_algo_kwargs",
    "default_eval_budgets",
    "evaluate_model",
    "main",
    "make_env",
    "save_with_sidecar",
    "train",
]

#: ``--quick``: just enough steps and episodes to exercise every part once; a flag
#: given explicitly wins over its value here.
QUICK = {
    "timesteps": 256, "n_envs": 2, "n_steps": 32, "eval_tasks": 2, "eval_samples": 2,
    "bc_episodes": 4,
}  # fmt: skip
#: Where a model lives in its run folder: its own subfolder, apart from other files.
MODEL = "model/"


class Sb3Command(TrainingCommand):
    """``agent-envs train-sb3``: train an SB3 agent per seed, save it, evaluate its Pass@(K,T)."""

    prog = "agent-envs train-sb3"
    extra = "sb3"
    model_files = (MODEL, f"{MODEL}model.zip", f"{MODEL}model.json")
    eval_files = ("result.json", "episodes.jsonl")

    def build_parser(self) -> Parser:
        return build_parser()

    def configs(self, args: argparse.Namespace) -> list[TrainConfig]:
        repeated = sorted({seed for seed in args.seed if args.seed.count(seed) > 1})
        if repeated:  # two runs of one seed would train into, and overwrite, one folder
            raise UsageError(f"--seed lists {repeated[0]} more than once; give each seed once.")
        configs = [_config(args, seed) for seed in args.seed]
        # Build one env up front, so that a bad encoding or vocabulary fails in one line,
        # not after the first rollout, and so does a policy too large to allocate.
        env = make_env(configs[0])
        try:
            inputs = gym.spaces.flatdim(env.observation_space)
        finally:
            env.close()
        for config in configs:
            check_first_layer(inputs, config.net_arch, config.algo)
        return configs

    def run_layout(self, args: argparse.Namespace, configs: list[TrainConfig]) -> tuple[Any, list]:
        first = configs[0]
        name = f"{first.env_id.split('/')[-1]}-{first.algo}-{first.regime()}"
        top = args.out if args.out is not None else Path("runs/sb3") / name
        return top, [f"seed{c.seed}/" if len(configs) > 1 else "" for c in configs]

    def settings_json(self, configs: list[TrainConfig]) -> Any:
        return [config_json(config) for config in configs]

    def evaluation(self, args: argparse.Namespace, config: TrainConfig) -> Any:
        return None if args.no_eval else _eval_settings(args, config)

    def trained(self, config: TrainConfig, out: Path) -> Path | None:
        from baselines.sb3.agent import read_sidecar, sidecar_path

        model_path = out / MODEL / "model.zip"
        if not (model_path.is_file() and sidecar_path(model_path).is_file()):
            return None  # never saved, or cut off mid-save: trained again
        check_same_settings(
            read_sidecar(model_path).get("config"), config_json(config), str(model_path)
        )
        return model_path

    def train(self, config: TrainConfig, out: Path) -> Path:
        return train(config, out / MODEL, log=print)

    def evaluate(self, args, config, settings, model, out) -> None:  # type: ignore[override]
        _evaluate(args, config, settings, model, out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``train-sb3`` command; return the exit status."""
    return COMMAND.main(argv)


def build_parser() -> Parser:
    """Return the ``train-sb3`` argument parser."""
    from baselines.sb3.agent import ALGORITHMS

    parser = base_parser(
        Sb3Command.prog,
        "Train an SB3 agent on an agent_envs env under a turn-budget regime, save it with a "
        "JSON sidecar, and evaluate its Pass@(K,T).",
        "agent_envs/FrozenLake-8x8-v0",
        budget=None,
        unset="tuned",
    )
    parser.add_argument(
        "--algo",
        choices=sorted(ALGORITHMS),
        default="maskable_ppo",
        help="the SB3 algorithm (default maskable_ppo, which uses the action masks)",
    )
    add_config_arguments(parser, TrainConfig)
    parser.add_argument(
        "--seed",
        type=int_list(0),
        default=(0,),
        help="seed, or seeds 0,1,2: one run each, in seed<N>/ of --out (default 0)",
    )
    parser.add_argument(
        "--train-tasks",
        type=int_arg(1),
        help="train on task ids F..F+N-1 only, F being --train-first (default: a fresh task "
        "every episode)",
    )
    parser.add_argument("--algo-kwargs", type=json_object, help="JSON, over the tuned ones")
    _add_encoding_arguments(parser.add_argument_group("observation encoding (default: tuned)"))
    _add_evaluation_arguments(parser.add_argument_group("evaluation"))
    parser.add_argument("--out", help="run folder (default runs/sb3/<env>-<algo>-<regime>)")
    add_run_folder_flags(parser)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny run that checks the plumbing (flags given explicitly still count)",
    )
    return parser


def _add_evaluation_arguments(evaluation: Any) -> None:
    flags = add_eval_arguments(
        evaluation,
        prefix="eval-",
        k="1,8",
        t=None,
        samples=8,
        tasks="50",
        unset={"t": "from the shortest path to twice the longest training budget"},
    )
    evaluation.set_defaults(eval_flags=flags)
    evaluation.add_argument(
        "--eval-first", type=int_arg(0), default=0, help="first eval task id (default 0)"
    )
    evaluation.add_argument(
        "--greedy", action="store_const", const=True, help="act greedily (default: tuned)"
    )
    evaluation.add_argument("--sample", dest="greedy", action="store_const", const=False,
                            help="sample (the default without a tuned entry)")  # fmt: skip
    evaluation.add_argument("--no-eval", action="store_true", help="train and save only")


def _add_encoding_arguments(encoding: Any) -> None:
    """Add the observation-encoding flags (:class:`wrappers.TextEncoder`'s settings)."""
    encoding.add_argument("--encoding", choices=MODES, help="how the text becomes numbers")
    encoding.add_argument("--max-length", type=int_arg(1), help="characters (tokens) kept")
    encoding.add_argument(
        "--keep", choices=("tail", "head"), help="which end of a longer text is kept"
    )
    encoding.add_argument("--view-only", action="store_true", help="encode the view only")
    encoding.add_argument(
        "--feedback-length",
        type=int_arg(1),
        help="chars mode: also encode the feedback's first N characters (e.g. Maze's heading)",
    )
    encoding.add_argument("--charset", help="characters indexed by chars mode (default: env's)")
    encoding.add_argument("--dim", type=int_arg(1), help="hashing dimension (default 1024)")
    encoding.add_argument("--tokenizer", help="tokenizer name or local path (tokens mode)")


#: The most weights the policy's first layer may have: 2**26 float32 weights are
#: 256 MiB, and the policy and value nets, their gradients and Adam's two moments
#: hold several copies; a wider encoding (``--max-length 1000000 --encoding chars``)
#: made torch ask for 12 GB and fail with a traceback.
MAX_FIRST_LAYER = 2**26


def check_first_layer(inputs: int, net_arch: Sequence[int], algo: str = "ppo") -> None:
    """Refuse an encoding whose width times the first hidden width exceeds :data:`MAX_FIRST_LAYER`.

    The first layer is ``net_arch``'s first, except for ``recurrent_ppo``,
    whose inputs feed an LSTM: its input weights are four gates of
    :data:`~baselines.sb3.training.LSTM_HIDDEN` units each.

    Raises:
        UsageError: the first layer would be too large to allocate.
    """
    if algo == "recurrent_ppo":
        units, layer, narrower = 4 * LSTM_HIDDEN, "LSTM gate units", ""
    else:
        units, layer, narrower = net_arch[0], "units", ", or a narrower first --net-arch layer"
    weights = inputs * units
    if weights > MAX_FIRST_LAYER:
        raise UsageError(
            f"the policy's first layer would hold {weights:,} weights ({inputs:,} encoded "
            f"inputs x {units:,} {layer}), over the limit of {MAX_FIRST_LAYER:,}: give a "
            f"smaller --max-length or --dim{narrower}."
        )


#: Settings train-sb3 passes to the algorithm itself (its own flags set them).
_OWN_SETTINGS = frozenset({"policy", "env", "gamma", "seed", "device", "verbose", "policy_kwargs"})
#: The ranges SB3 documents for the numeric settings a user tunes most; out of them
#: SB3 failed deep inside training (``n_steps`` 0: an UnboundLocalError, ``batch_size``
#: -1: a reshape error) or trained on nonsense (``gae_lambda`` 7).  (low, high, low open)
_RANGES: dict[str, tuple[float, float | None, bool]] = {
    "learning_rate": (0.0, None, True), "n_steps": (1, None, False),
    "batch_size": (1, None, False), "n_epochs": (1, None, False),
    "gae_lambda": (0.0, 1.0, False), "clip_range": (0.0, None, True),
    "ent_coef": (0.0, None, False), "vf_coef": (0.0, None, False),
    "max_grad_norm": (0.0, None, True), "buffer_size": (1, None, False),
    "learning_starts": (0, None, False), "tau": (0.0, 1.0, False),
    "train_freq": (1, None, False), "gradient_steps": (-1, None, False),
    "target_update_interval": (1, None, False), "exploration_fraction": (0.0, 1.0, False),
    "exploration_initial_eps": (0.0, 1.0, False), "exploration_final_eps": (0.0, 1.0, False),
}  # fmt: skip


def check_algo_kwargs(algo: str, overrides: dict[str, Any]) -> None:
    """Refuse ``--algo-kwargs`` the algorithm does not take, or of the wrong kind, in one line.

    Checked before any work: SB3 would raise an ``AssertionError`` for
    ``{"learning_rate": "x"}`` once the model is built, or a ``TypeError``
    for an unknown name.  A setting whose default is a number must be a
    number (an int where the default is an int), one whose default is a
    bool a bool; others (schedules, ``"auto"``) are left to SB3.  A number is
    finite (JSON's ``NaN`` and ``Infinity`` are refused) and, for the settings
    of :data:`_RANGES`, inside the range SB3 documents.
    """
    import inspect

    from baselines.sb3.agent import algorithm_class

    parameters = inspect.signature(algorithm_class(algo).__init__).parameters
    for name, value in overrides.items():
        if name in _OWN_SETTINGS:
            raise UsageError(f"--algo-kwargs: {name!r} is set by train-sb3's own flags")
        if name not in parameters:
            close = difflib.get_close_matches(name, list(parameters), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"--algo-kwargs: {algo} has no setting {name!r}{hint}")
        default = HYPERPARAMETERS[algo].get(name, parameters[name].default)
        if isinstance(default, bool):
            fits = isinstance(value, bool)
        elif isinstance(default, int):
            fits = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(default, float):
            fits = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            continue
        if not fits:
            kind = {bool: "true or false", int: "an int"}.get(type(default), "a number")
            raise UsageError(
                f"--algo-kwargs: {name} must be {kind} (default {default!r}), got {value!r:.40}"
            )
        if not isinstance(default, bool):  # JSON takes NaN and Infinity: torch does not
            low, high, open_low = _RANGES.get(name, (None, None, False))
            check_number(value, f"--algo-kwargs: {name}", low, high, open_low=open_low)


def _config(args: argparse.Namespace, seed: int) -> TrainConfig:
    """Return the checked :class:`TrainConfig` for one seed of the parsed arguments."""
    if args.algo_kwargs:
        check_algo_kwargs(args.algo, args.algo_kwargs)
    regime = budget_regime(args)
    first = args.train_first or 0
    values = config_values(TrainConfig, args)
    if args.quick:  # a flag given explicitly wins over --quick's value
        values.update({name: QUICK[name] for name in ("timesteps", "n_envs")
                       if name not in args.given})  # fmt: skip
    config = TrainConfig(
        **values,
        env_id=args.env_id,
        algo=args.algo,
        budget=args.budget,
        budget_mix=args.budget_mix,
        weights=None if regime is None else regime.weights,
        visible_budget=args.visible_budget or args.budget_feature,
        seed=seed,
        train_tasks=None
        if args.train_tasks is None
        else tuple(range(first, first + args.train_tasks)),
        encoding=_encoding_flags(args),
        algo_kwargs=_algo_kwargs(args),
    )
    if args.quick and config.bc_episodes and "bc_episodes" not in args.given:
        config = replace(config, bc_episodes=min(config.bc_episodes, QUICK["bc_episodes"]))
    return config


def _algo_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Return the algorithm's settings over the tuned ones, shortened by ``--quick``."""
    if not args.quick:
        return cli_algo_kwargs(args.env_id, args.algo, args.algo_kwargs)
    algo_kwargs = cli_algo_kwargs(args.env_id, args.algo, args.algo_kwargs or {})
    if args.algo != "dqn":
        algo_kwargs.setdefault("n_steps", QUICK["n_steps"])
    else:
        algo_kwargs.setdefault("learning_starts", 64)
    return algo_kwargs


def _encoding_flags(args: argparse.Namespace) -> dict[str, Any] | None:
    """Return the encoding the flags make over the tuned one (``None``: no encoding flag)."""
    charset = None if args.charset is None else args.charset.replace("\\n", "\n")
    flags = {"mode": args.encoding, "keep": args.keep, "max_length": args.max_length,
             "view_only": args.view_only or None, "feedback_length": args.feedback_length,
             "charset": charset, "dim": args.dim, "tokenizer": args.tokenizer}  # fmt: skip
    given = {name: value for name, value in flags.items() if value is not None}
    if not given:
        return None
    encoding = cli_encoding(args.env_id, args.algo, given)
    if "feedback_length" in encoding and encoding["mode"] != "chars":
        raise UsageError("--feedback-length needs --encoding chars")
    if encoding["mode"] == "tokens" and "tokenizer" not in encoding:
        raise UsageError("--encoding tokens needs --tokenizer NAME_OR_PATH")
    return encoding


def default_eval_budgets(training: Sequence[int], shortest: int = 1) -> tuple[int, ...]:
    """Return a short, readable T grid from the shortest path to twice the longest budget.

    ``shortest`` is the fewest turns any evaluated task needs (no column
    below it, where every agent scores 0).  The grid holds ``shortest``, the
    training budgets at or above it and twice the longest (at least twice
    ``shortest``), filled up with geometric midpoints to at least four (while
    a midpoint is new) and thinned to at most six values.
    """
    shortest = max(1, shortest)
    high = max(2 * max(training), 2 * shortest)
    grid = sorted({shortest, high, *(t for t in training if t >= shortest)})
    while len(grid) < 4:
        gaps = [(b / a, i) for i, (a, b) in enumerate(itertools.pairwise(grid))]
        _ratio, i = max(gaps)
        middle = round((grid[i] * grid[i + 1]) ** 0.5)
        if middle in grid:
            break
        grid.insert(i + 1, middle)
    if len(grid) > 6:
        keep = np.unique(np.rint(np.linspace(0, len(grid) - 1, 6)).astype(int))
        grid = [grid[i] for i in keep]
    return tuple(grid)


def shortest_oracle_turns(env_id: str, tasks: Sequence[int]) -> int:
    """Return the fewest oracle turns from the start over ``tasks`` (1 if unknown)."""
    env = gym.make(env_id)
    fewest = None
    for task in tasks:
        env.reset(seed=0, options={TASK_ID: task})
        turns = env.unwrapped.oracle_turns() if isinstance(env.unwrapped, Oracle) else None
        if turns is not None:
            fewest = turns if fewest is None else min(fewest, turns)
    env.close()
    return fewest or 1


def _eval_settings(args: argparse.Namespace, config: TrainConfig) -> Any:
    """Return the evaluation's settings for ``config``, checked before training."""
    if args.quick:
        if "eval_samples" not in args.given:
            args.eval_samples = QUICK["eval_samples"]
        if "eval_tasks" not in args.given:
            args.eval_tasks = str(QUICK["eval_tasks"])
        if "eval_k" not in args.given:
            args.eval_k = tuple(k for k in args.eval_k if k <= args.eval_samples) or (1,)
    tasks = parse_tasks(args.eval_tasks, "--eval-tasks", first=args.eval_first)
    tasks = range(tasks) if isinstance(tasks, int) else tasks
    budgets = args.eval_budgets or default_eval_budgets(
        config.training_budgets(), shortest_oracle_turns(config.env_id, tasks)
    )
    flags = args.eval_flags
    return flags.settings(args, first=args.eval_first, budgets=budgets, seed=config.seed)


def _evaluate(
    args: argparse.Namespace, config: TrainConfig, settings: Any, model_path: Path, out: Path
) -> None:
    """Evaluate the trained model with ``settings``; print the table, save the result."""
    greedy = tuned(config.env_id, config.algo).get("greedy", False)
    greedy = greedy if args.greedy is None else args.greedy
    tasks = settings.tasks
    held_out = config.train_tasks is None and config.train_first > max(tasks)
    print(f"evaluating task ids {tasks[0]}-{tasks[-1]} ("
          f"{'held out' if held_out else 'may overlap training'}), acting "
          f"{'greedily' if greedy else 'by sampling'}")  # fmt: skip
    try:
        result = evaluate_model(
            model_path,
            env_id=config.env_id,
            budgets=settings.budgets,
            ks=settings.ks,
            tasks=tasks,
            samples=settings.samples,
            deterministic=greedy,
            seed=config.seed,
            out=out,
        )
    except ValueError as error:
        raise UsageError(_no_log_flag(str(error), out)) from None
    print(result.table())
    print(f"wrote {out / 'result.json'}")


def _no_log_flag(message: str, out: Path) -> str:
    """Say what a training command does where the evaluator says "another --log path"."""
    instead = (
        f"the evaluation settings of {out} (its --eval-* flags), pass --overwrite to train and "
        f"evaluate anew, or delete {out / 'episodes.jsonl'} to evaluate the saved model anew"
    )
    message = message.replace(
        "use another --log path, or the same settings to resume", f"rerun with {instead}"
    )
    return message.replace("pass another --log path", f"keep {instead}")


#: The ``train-sb3`` command.
COMMAND = Sb3Command()

if __name__ == "__main__":
    sys.exit(main())
