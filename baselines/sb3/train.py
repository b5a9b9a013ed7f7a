"""Train a Stable-Baselines3 agent on an agent_envs env under a turn-budget regime.

Read top to bottom: the hyperparameters, training, saving, then the
evaluation with the agent_envs evaluator; the settings (:class:`TrainConfig`)
and the env stack they build live in :mod:`baselines.sb3.env`.  Run it as a
script or through the package CLI::

    agent-envs train-sb3 agent_envs/FrozenLake-8x8-v0 --algo maskable_ppo \\
        --timesteps 60000 --budget-mix 5,10,20,40 --out runs/lake-mix
    python -m baselines.sb3.train agent_envs/FrozenLake-v0 --quick

The run folder gets ``model.zip``, its JSON sidecar ``model.json`` (every
setting needed to rebuild the observation encoder and the action mapping),
``result.json`` (the evaluator's Pass@(K,T) surface) and ``episodes.jsonl``
(the evaluator's resumable log).  ``SB3Agent(path="run/model.zip")`` reloads
the policy; ``agent-envs eval --agent sb3 --agent-kwargs '{"path": ...}'``
evaluates it again.

The env stack (:mod:`baselines.sb3.env`), inside out: ``gym.make(env_id)``
-> ``ProcessReward`` (if ``--process-reward``) -> ``TurnBudget`` or
``BudgetMix`` -> ``DiscreteActions`` -> ``EncodeObservation`` -> SB3's
``Monitor``.  Training draws a fresh task for every episode unless
``--train-tasks N`` restricts it to task ids ``F..F+N-1`` (``--train-first F``,
default 0); evaluation uses task ids ``--eval-first .. --eval-first + M - 1``,
so with ``--eval-first`` past the training ids it measures held-out tasks.

Needs the ``[sb3]`` extra.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

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
    json_object,
    number_arg,
    parse_tasks,
    run_command,
)
from agent_envs.files import add_run_folder_flags, atomic_write
from agent_envs.protocol import SUCCESS, TASK_ID, Oracle
from baselines.sb3.defaults import cli_algo_kwargs, cli_encoding, describe, tuned
from baselines.sb3.env import TrainConfig, make_env, stack_settings, vec_envs
from wrappers.encode_observation import MODES

__all__ = [
    "HYPERPARAMETERS",
    "TrainConfig",
    "build_parser",
    "evaluate_model",
    "main",
    "make_env",
    "train",
]

# ---------------------------------------------------------------- hyperparameters
#: Per-algorithm defaults, tuned for small text envs on one CPU thread: short
#: rollouts over several envs, a small network, a little entropy bonus.
#: ``--algo-kwargs '{"learning_rate": 1e-3}'`` overrides any of them.
HYPERPARAMETERS: dict[str, dict[str, Any]] = {
    "ppo": {"n_steps": 128, "batch_size": 256, "n_epochs": 4, "learning_rate": 5e-4,
            "ent_coef": 0.01, "gae_lambda": 0.95},
    "maskable_ppo": {"n_steps": 128, "batch_size": 256, "n_epochs": 4, "learning_rate": 5e-4,
                     "ent_coef": 0.01, "gae_lambda": 0.95},
    "recurrent_ppo": {"n_steps": 128, "batch_size": 256, "n_epochs": 4, "learning_rate": 5e-4,
                      "ent_coef": 0.01, "gae_lambda": 0.95},
    "a2c": {"n_steps": 16, "learning_rate": 7e-4, "ent_coef": 0.01},
    "dqn": {"learning_rate": 5e-4, "buffer_size": 50_000, "learning_starts": 1_000,
            "batch_size": 64, "train_freq": 4, "target_update_interval": 1_000,
            "exploration_fraction": 0.3, "exploration_final_eps": 0.05},
}  # fmt: skip
POLICIES = {"recurrent_ppo": "MlpLstmPolicy"}
#: ``--quick``: just enough steps and episodes to exercise every part once.
QUICK = {
    "timesteps": 256, "n_envs": 2, "n_steps": 32, "eval_tasks": 2, "samples": 2,
    "bc_episodes": 4,
}  # fmt: skip


# ------------------------------------------------------------------------ train
def train(config: TrainConfig, out: Path, log: Callable[[str], None] = lambda _: None) -> Path:
    """Train, save ``model.zip`` and its sidecar under ``out``; return the model path."""
    import torch

    from baselines.sb3.agent import algorithm_class, write_sidecar

    torch.set_num_threads(config.threads)
    for line in describe(config):
        log(line)
    stack = stack_settings(config)
    kwargs, policy_kwargs = _hyperparameters(config)
    vec_env = vec_envs(config)
    try:
        model = algorithm_class(config.algo)(
            POLICIES.get(config.algo, "MlpPolicy"),
            vec_env,
            gamma=config.gamma,
            seed=config.seed,
            device="cpu",
            verbose=0,
            policy_kwargs=policy_kwargs,
            **kwargs,
        )
        started = time.perf_counter()
        if config.init_from is not None:
            # Policy weights only; the optimizer starts afresh.
            model.set_parameters(config.init_from, exact_match=True, device="cpu")
        warm_start = _warm_start(model, config, log)
        log(f"training {config.algo} on {config.env_id} ({config.regime()}, seed {config.seed})")
        model.learn(total_timesteps=config.timesteps)
        seconds = time.perf_counter() - started
    finally:
        vec_env.close()
    out.mkdir(parents=True, exist_ok=True)
    model_path = out / "model.zip"
    save_model(model, model_path)
    write_sidecar(
        model_path,
        {
            "algo": config.algo,
            **stack.to_dict(),
            "behaviour_cloning": warm_start,
            "config": _jsonable(asdict(config)),
            "hyperparameters": _jsonable(kwargs),
            "net_arch": list(config.net_arch),
            "train_seconds": round(seconds, 2),
            # Success over SB3's buffer of recent training episodes (up to 100).
            "train_success_rate": _recent_success(model),
            "steps_per_second": round(config.timesteps / max(seconds, 1e-9), 1),
            "versions": _versions(),
        },
    )
    log(
        f"trained {config.timesteps} steps in {seconds:.1f} s (recent training success "
        f"{_recent_success(model)}) -> {model_path}"
    )
    return model_path


def _hyperparameters(config: TrainConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the algorithm's keyword arguments and its ``policy_kwargs``."""
    kwargs = {**HYPERPARAMETERS[config.algo], **config.algo_kwargs}
    if "batch_size" in kwargs and "n_steps" in kwargs:
        # A PPO minibatch cannot exceed the rollout (n_steps * n_envs).
        kwargs["batch_size"] = min(kwargs["batch_size"], kwargs["n_steps"] * config.n_envs)
    policy_kwargs: dict[str, Any] = {"net_arch": list(config.net_arch)}
    if config.algo == "recurrent_ppo":
        from baselines.sb3.agent import FlattenIntExtractor

        policy_kwargs["lstm_hidden_size"] = 64
        policy_kwargs["features_extractor_class"] = FlattenIntExtractor
    return kwargs, policy_kwargs


def _warm_start(
    model: Any, config: TrainConfig, log: Callable[[str], None]
) -> dict[str, Any] | None:
    """Behaviour-clone the fresh policy from noisy-oracle demonstrations, if asked."""
    if not config.bc_episodes:
        return None
    from baselines.sb3.bc import behaviour_clone, collect_demonstrations

    started = time.perf_counter()
    demonstrations = collect_demonstrations(
        config, config.bc_episodes, epsilon=config.bc_epsilon, seed=config.seed
    )
    fit = behaviour_clone(model, demonstrations, epochs=config.bc_epochs, seed=config.seed)
    summary = {
        "episodes": config.bc_episodes,
        "epsilon": config.bc_epsilon,
        "states": len(demonstrations),
        "demonstration_success": round(demonstrations.success_rate, 3),
        **fit,
        "seconds": round(time.perf_counter() - started, 2),
    }
    log(f"behaviour cloning: {summary}")
    return summary


def save_model(model: Any, path: Path) -> None:
    """Save the model without the optimizer's moment estimates.

    Adam keeps two running averages per weight, so a saved optimizer triples
    ``model.zip``: with the default ``chars`` encoding the first layer alone
    has ``max_length * (len(charset) + 2) * 64`` weights per network (about
    12 MB of the 38 MB that a 256-step FrozenLake run used to write).  The
    policy acts without them; resuming training restarts Adam's averages.
    """
    policy = model.policy
    saved = policy.optimizer
    # The same parameters in a fresh optimizer: an empty state, the same layout.
    weights = [weight for group in saved.param_groups for weight in group["params"]]
    policy.optimizer = policy.optimizer_class(weights, **policy.optimizer_kwargs)
    try:
        atomic_write(path, model.save)
    finally:
        policy.optimizer = saved


def _recent_success(model: Any) -> float | None:
    episodes = [info for info in model.ep_info_buffer if SUCCESS in info]
    if not episodes:
        return None
    return round(float(np.mean([bool(info[SUCCESS]) for info in episodes])), 3)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda item: list(item)))


def _versions() -> dict[str, str]:
    import importlib.metadata as metadata

    versions = {}
    for package in (
        "agent-envs",
        "gymnasium",
        "numpy",
        "torch",
        "stable-baselines3",
        "sb3-contrib",
    ):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


# --------------------------------------------------------------------- evaluate
def evaluate_model(
    model_path: Path,
    *,
    env_id: str,
    budgets: Sequence[int],
    ks: Sequence[int],
    tasks: Sequence[int],
    samples: int,
    deterministic: bool = False,
    seed: int = 0,
    out: Path | None = None,
    step_quality: int = 0,
    step_quality_seed: int = 0,
) -> Any:
    """Evaluate a saved model with the agent_envs evaluator; write ``result.json`` in ``out``.

    The episode log goes to ``out/episodes.jsonl``, so a stopped evaluation
    resumes.  ``step_quality`` is the evaluator's option of that name (shared
    reference states per task), drawn with ``step_quality_seed``: the study's
    seed, not ``seed``, so that every training seed meets the same states.
    Returns the
    :class:`agent_envs.evaluation.EvalResult`.
    """
    from agent_envs.evaluation import evaluate
    from baselines.sb3.agent import SB3Agent

    agent = SB3Agent(str(model_path), deterministic=deterministic)
    result = evaluate(
        agent,
        env_id,
        ks=list(ks),
        budgets=list(budgets),
        tasks=list(tasks),
        samples=samples,
        seed=seed,
        visible_budget=agent.visible_budget,
        log_path=None if out is None else out / "episodes.jsonl",
        agent_name=f"sb3:{model_path}",
        step_quality=step_quality,
        step_quality_seed=step_quality_seed,
    )
    if out is not None:
        result.save(out / "result.json")
    return result


# ------------------------------------------------------------------------- CLI
_PROG = "agent-envs train-sb3"


def build_parser() -> tuple[Parser, EvalArguments, BudgetArguments]:
    """Return the ``train-sb3`` argument parser and the readers of its shared flags."""
    from baselines.sb3.agent import ALGORITHMS

    parser = Parser(
        prog=_PROG,
        description="Train an SB3 agent on an agent_envs env under a turn-budget regime, "
        "save it with a JSON sidecar, and evaluate its Pass@(K,T).",
    )
    parser.add_argument("env_id", help="e.g. agent_envs/FrozenLake-8x8-v0")
    parser.add_argument("--algo", choices=sorted(ALGORITHMS), default="maskable_ppo")
    parser.add_argument("--timesteps", type=int_arg(1), help="env steps (default: tuned)")
    budget = add_budget_arguments(parser, default=None, unset="tuned")
    _add_training_arguments(parser)
    _add_encoding_arguments(parser.add_argument_group("observation encoding (default: tuned)"))
    evaluation = parser.add_argument_group("evaluation")
    flags = add_eval_arguments(
        evaluation,
        prefix="eval-",
        k="1,8",
        t=None,
        samples=8,
        tasks="50",
        unset={"t": "from the shortest path to twice the longest training budget"},
    )
    evaluation.add_argument("--eval-first", type=int_arg(0), default=0, help="first eval task id")
    deprecated(evaluation, "--samples", "--eval-samples", type=int_arg(1))
    deprecated(evaluation, "--k", "--eval-k", type=int_list(None))
    evaluation.add_argument(
        "--greedy", action="store_const", const=True, help="act greedily (default: tuned)"
    )
    evaluation.add_argument("--sample", dest="greedy", action="store_const", const=False,
                            help="sample (the default without a tuned entry)")  # fmt: skip
    evaluation.add_argument("--no-eval", action="store_true", help="train and save only")
    parser.add_argument("--out", help="run folder (default runs/sb3/<env>-<regime>)")
    add_run_folder_flags(parser)
    parser.add_argument("--quick", action="store_true", help="tiny run that checks the plumbing")
    return parser, flags, budget


def _add_training_arguments(parser: Parser) -> None:
    """Add the training flags: the reward, the envs, the tasks, the warm start, the network."""
    parser.add_argument(
        "--budget-feature",
        action="store_true",
        help="add the turns left as a number to the input (implies --visible-budget)",
    )
    parser.add_argument(
        "--truncation-terminal",
        action="store_true",
        help="treat running out of turns as terminal (no bootstrap at truncation)",
    )
    parser.add_argument(
        "--process-reward", type=number_arg(), metavar="COEF", help="add ProcessReward (coef)"
    )
    parser.add_argument("--gamma", type=number_arg(0, 1, open_low=True), default=0.99)
    parser.add_argument(
        "--seed", type=int_list(0), default=(0,), help="seed, or seeds 0,1,2 (one run each)"
    )
    parser.add_argument("--n-envs", type=int_arg(1), default=8)
    parser.add_argument("--vec", choices=("dummy", "subproc"), default="dummy")
    parser.add_argument("--train-tasks", type=int_arg(1), help="train on N task ids only")
    parser.add_argument(
        "--train-first",
        type=int_arg(0),
        help="first training task id (default: tuned); without --train-tasks a fresh task "
        "every episode from this id up (keep the evaluation ids below it)",
    )
    warm = parser.add_argument_group("behaviour-cloning warm start")
    warm.add_argument(
        "--bc-episodes",
        type=int_arg(0),
        help="noisy-oracle demonstration episodes (0: none; default: tuned)",
    )
    warm.add_argument("--bc-epsilon", type=number_arg(0, 1), default=0.2, help="its noise")
    warm.add_argument("--bc-epochs", type=int_arg(1), help="supervised epochs (default: tuned)")
    parser.add_argument("--algo-kwargs", type=json_object, help="JSON, over the tuned ones")
    parser.add_argument("--threads", type=int_arg(1), default=1, help="torch threads (default 1)")
    parser.add_argument("--net-arch", type=int_list(1), help="hidden layers (default: tuned)")


def _add_encoding_arguments(encoding: Any) -> None:
    """Add the observation-encoding flags (:class:`wrappers.TextEncoder`'s settings)."""
    encoding.add_argument("--encoding", choices=MODES)
    encoding.add_argument("--max-length", type=int_arg(1), help="characters (tokens) kept")
    encoding.add_argument("--keep", choices=("tail", "head"))
    encoding.add_argument("--view-only", action="store_true", help="encode the view only")
    encoding.add_argument(
        "--feedback-length",
        type=int_arg(1),
        help="chars mode: also encode the feedback's first N characters (e.g. Maze's heading)",
    )
    encoding.add_argument("--charset", help="characters indexed by chars mode (default: env's)")
    encoding.add_argument("--dim", type=int_arg(1), help="hashing dimension (default 1024)")
    encoding.add_argument("--tokenizer", help="tokenizer name or local path (tokens mode)")


#: Settings train-sb3 passes to the algorithm itself (its own flags set them).
_OWN_SETTINGS = frozenset({"policy", "env", "gamma", "seed", "device", "verbose", "policy_kwargs"})


def check_algo_kwargs(algo: str, overrides: dict[str, Any]) -> None:
    """Refuse ``--algo-kwargs`` the algorithm does not take, or of the wrong kind, in one line.

    Checked before any work: SB3 would raise an ``AssertionError`` for
    ``{"learning_rate": "x"}`` once the model is built, or a ``TypeError``
    for an unknown name.  A setting whose default is a number must be a
    number (an int where the default is an int), one whose default is a
    bool a bool; others (schedules, ``"auto"``) are left to SB3.
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


def config_from_args(args: argparse.Namespace, seed: int, budget: BudgetArguments) -> TrainConfig:
    """Return the checked :class:`TrainConfig` for one seed of the parsed arguments."""
    _, weights = budget.budgets(args)
    encoding = _encoding_flags(args)
    if args.algo_kwargs:
        check_algo_kwargs(args.algo, args.algo_kwargs)
    algo_kwargs = cli_algo_kwargs(args.env_id, args.algo, args.algo_kwargs)
    timesteps, n_envs = args.timesteps, args.n_envs
    if args.quick:
        timesteps, n_envs = QUICK["timesteps"], QUICK["n_envs"]
        algo_kwargs = cli_algo_kwargs(args.env_id, args.algo, args.algo_kwargs or {})
        if args.algo != "dqn":
            algo_kwargs.setdefault("n_steps", QUICK["n_steps"])
        else:
            algo_kwargs.setdefault("learning_starts", 64)
    first = args.train_first or 0
    config = TrainConfig(
        env_id=args.env_id,
        algo=args.algo,
        timesteps=timesteps,
        budget=args.budget,
        budget_mix=args.budget_mix,
        weights=weights,
        visible_budget=args.visible_budget or args.budget_feature,
        budget_feature=args.budget_feature,
        truncation_terminal=args.truncation_terminal,
        process_reward=args.process_reward,
        gamma=args.gamma,
        seed=seed,
        n_envs=n_envs,
        vec=args.vec,
        train_tasks=None
        if args.train_tasks is None
        else tuple(range(first, first + args.train_tasks)),
        train_first=args.train_first,
        bc_episodes=args.bc_episodes,
        bc_epsilon=args.bc_epsilon,
        bc_epochs=args.bc_epochs,
        encoding=encoding,
        algo_kwargs=algo_kwargs,
        threads=args.threads,
        net_arch=None if args.net_arch is None else tuple(args.net_arch),
    )
    if args.quick and config.bc_episodes:
        config = replace(config, bc_episodes=min(config.bc_episodes, QUICK["bc_episodes"]))
    return config


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
    ``shortest``), filled up with
    geometric midpoints to at least four and thinned to at most six values.
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``train-sb3`` command; return the exit status."""
    return run_command(_PROG, _main, argv, extra="sb3")


def _eval_settings(args: argparse.Namespace, flags: EvalArguments, config: TrainConfig) -> Any:
    """Return the evaluation's settings for ``config``, checked before training."""
    if args.quick:
        args.eval_samples, args.eval_tasks = QUICK["samples"], str(QUICK["eval_tasks"])
        args.eval_k = tuple(k for k in args.eval_k if k <= args.eval_samples) or (1,)
    tasks = parse_tasks(args.eval_tasks, "--eval-tasks", first=args.eval_first)
    tasks = range(tasks) if isinstance(tasks, int) else tasks
    budgets = args.eval_budgets or default_eval_budgets(
        config.training_budgets(), shortest_oracle_turns(config.env_id, tasks)
    )
    return flags.settings(args, first=args.eval_first, budgets=budgets, seed=config.seed)


#: What train-sb3 writes in a run folder (in ``seed<N>/`` per seed when there are several).
RUN_FILES = ("model.zip", "model.json", "result.json", "episodes.jsonl")


def _run_folder(args: argparse.Namespace, configs: list[TrainConfig]) -> tuple[Path, list[Path]]:
    """Check ``--out`` and every file the run will write there, before any work."""
    from agent_envs.files import prepare_run_folder

    first = configs[0]
    top = (
        args.out
        if args.out is not None
        else Path("runs/sb3") / (f"{first.env_id.split('/')[-1]}-{first.algo}-{first.regime()}")
    )
    seeds = [f"seed{config.seed}/" if len(configs) > 1 else "" for config in configs]
    files = tuple(f"{seed}{name}" for seed in seeds for name in RUN_FILES)
    try:
        folder = prepare_run_folder(top, files, resume=args.resume, overwrite=args.overwrite)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return folder, [folder / seed for seed in seeds]


def _saved_model(config: TrainConfig, out: Path) -> Path | None:
    """With --resume: the model in ``out`` if it was trained with ``config``, else ``None``."""
    from baselines.sb3.agent import read_sidecar

    model_path = out / "model.zip"
    if not model_path.is_file():
        return None
    saved = read_sidecar(model_path).get("config")
    wanted = _jsonable(asdict(config))
    if saved != wanted:
        changed = sorted(key for key in wanted if (saved or {}).get(key) != wanted[key])
        raise UsageError(
            f"--resume: {model_path} was trained with other settings ({', '.join(changed)}); "
            "rerun with those settings, pass --overwrite to replace it, or use another --out"
        )
    return model_path


def _main(argv: list[str]) -> int:
    parser, flags, budget = build_parser()
    args = parser.parse_args(argv)
    from agent_envs.registration import resolve_env_id

    try:  # a registered id, module:EnvId, or an id an installed env package registers
        args.env_id = resolve_env_id(args.env_id)
    except ValueError as error:
        raise UsageError(str(error)) from None
    configs = [config_from_args(args, seed, budget) for seed in args.seed]
    folder, outs = _run_folder(args, configs)
    # Build one env up front, so that a bad encoding or vocabulary fails in one line, not
    # after the first rollout; the evaluation's settings are checked before training too.
    make_env(configs[0]).close()
    plans = [None if args.no_eval else _eval_settings(args, flags, c) for c in configs]
    saved = [
        _saved_model(config, out) if args.resume else None
        for config, out in zip(configs, outs, strict=True)
    ]
    try:
        _run(args, configs, outs, saved, plans)
    except KeyboardInterrupt:
        print(
            f"agent-envs train-sb3: interrupted. {folder} keeps every model saved so far and "
            "the evaluation episodes that finished; rerun the same command with --resume to "
            "reuse them (a model whose training was cut off is trained again).",
            file=sys.stderr,
        )
        return 130
    return 0


def _run(
    args: argparse.Namespace,
    configs: list[TrainConfig],
    outs: list[Path],
    saved: list[Path | None],
    plans: list[Any],
) -> None:
    """Train (or reuse the model --resume found) and evaluate each seed's model."""
    for config, out, found, settings in zip(configs, outs, saved, plans, strict=True):
        model_path = found or train(config, out, log=print)
        if settings is not None:
            _evaluate(args, config, settings, model_path, out)


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
    print(result.table())
    print(f"wrote {out / 'result.json'}")


if __name__ == "__main__":
    sys.exit(main())
