"""Train a Stable-Baselines3 agent on an agent_envs env under a turn-budget regime.

Read top to bottom: the hyperparameters, training, saving (the model and its
sidecar as one step), then the evaluation with the agent_envs evaluator; the
settings (:class:`TrainConfig`) and the env stack they build live in
:mod:`baselines.sb3.env`, and the ``train-sb3`` command in
:mod:`baselines.sb3.train`.

:func:`train` saves ``model.zip`` and its JSON sidecar ``model.json`` (every
setting needed to rebuild the observation encoder and the action mapping) in
the folder it is given; ``SB3Agent(path=".../model.zip")`` reloads the
policy, and ``agent-envs eval --agent sb3 --agent-kwargs '{"path": ...}'``
evaluates it again.

The env stack (:mod:`baselines.sb3.env`), inside out: ``gym.make(env_id)``
-> ``TaskPool`` -> ``TurnBudget`` or ``BudgetMix`` -> ``ProcessReward`` (if
set) -> ``TruncationIsTerminal`` (if set) -> ``DiscreteActions`` ->
``EncodeObservation`` -> SB3's ``Monitor``.

Needs the ``[sb3]`` extra.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.files import atomic_write, path_error
from baselines.command import versions
from baselines.sb3.defaults import describe
from baselines.sb3.env import TrainConfig, make_env, stack_settings, vec_envs
from wrappers.protocol import SUCCESS

__all__ = [
    "HYPERPARAMETERS",
    "TrainConfig",
    "config_json",
    "evaluate_model",
    "make_env",
    "save_with_sidecar",
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
#: RecurrentPPO's LSTM width: its inputs feed the LSTM, which feeds ``net_arch``.
LSTM_HIDDEN = 64


# ------------------------------------------------------------------------ train
def train(config: TrainConfig, out: Path, log: Callable[[str], None] = lambda _: None) -> Path:
    """Train, save ``model.zip`` and its sidecar under ``out``; return the model path."""
    import torch

    from baselines.sb3.agent import algorithm_class

    torch.set_num_threads(config.threads)
    for line in describe(config):
        log(line)
    with contextlib.closing(make_env(config)) as env:
        stack = stack_settings(env, action_masks=config.algo == "maskable_ppo")
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
    sidecar = {
        "algo": config.algo,
        **stack,
        "behaviour_cloning": warm_start,
        "config": config_json(config),
        "hyperparameters": _jsonable(kwargs),
        "net_arch": list(config.net_arch),
        "train_seconds": round(seconds, 2),
        # Success over SB3's buffer of recent training episodes (up to 100).
        "train_success_rate": _recent_success(model),
        "steps_per_second": round(config.timesteps / max(seconds, 1e-9), 1),
        "versions": versions(PACKAGES),
    }
    model_path = save_with_sidecar(model, sidecar, out)
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

        policy_kwargs["lstm_hidden_size"] = LSTM_HIDDEN
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
    12 MB of the 38 MB a 256-step FrozenLake run writes with it).  The
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


#: The packages whose versions the sidecar records.
PACKAGES = ("agent-envs", "gymnasium", "numpy", "torch", "stable-baselines3", "sb3-contrib")


def config_json(config: TrainConfig) -> dict[str, Any]:
    """Return ``config`` as the sidecar records it (and ``--resume`` compares it)."""
    return _jsonable(asdict(config))


def save_with_sidecar(model: Any, sidecar: dict[str, Any], out: Path) -> Path:
    """Save ``model.zip`` and its sidecar ``model.json`` in ``out`` as one step; return the zip.

    Both are written in a staging folder beside them, then moved in, the
    sidecar last and only after the old one is gone: a sidecar is there only
    beside the model it describes, so a save cut off at any point leaves a
    folder that ``--resume`` trains again, never a model read with another's
    settings.
    """
    from baselines.sb3.agent import write_sidecar

    out.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(dir=out, prefix=".saving-") as staging:
            staged = Path(staging) / "model.zip"
            save_model(model, staged)
            sidecar_file = write_sidecar(staged, sidecar)
            with contextlib.suppress(FileNotFoundError):
                (out / sidecar_file.name).unlink()
            os.replace(staged, out / "model.zip")
            os.replace(sidecar_file, out / sidecar_file.name)
    except OSError as error:
        raise path_error(error, out) from None
    return out / "model.zip"


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
