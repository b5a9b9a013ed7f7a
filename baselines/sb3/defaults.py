"""Tuned training settings per env id and algorithm, in the manner of rl-baselines3-zoo.

``defaults.json`` beside this module holds, per env id and algorithm, the
settings that make ``agent-envs train-sb3 ENV`` learn without flags: the
observation encoding, the network, the PPO hyperparameters, the training
budget, the number of steps, the held-out split and whether to warm-start by
behaviour cloning from the env's oracle.  :class:`baselines.sb3.env.TrainConfig`
fills every such setting that its caller left at ``None`` (:func:`resolve`):
from the tuned entry when the env and algorithm have one, else from
:data:`FALLBACKS`.  A setting the caller gives is used as given (in Python it
replaces the tuned value whole; the ``train-sb3`` command instead lays
``--algo-kwargs`` and the encoding flags over the tuned ones).

The encoding ``"compact"`` means the env's own compact view
(:class:`wrappers.protocol.CompactView`: e.g. FrozenLake's map in the
characters ``FHSG@``), or the whole observation in ``chars`` mode for an env
that declares none.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import gymnasium as gym

from wrappers.protocol import CompactView

__all__ = [
    "FALLBACKS",
    "TUNED_FILE",
    "cli_algo_kwargs",
    "cli_encoding",
    "compact_encoding",
    "describe",
    "resolve",
    "tuned",
]

#: The settings file shipped with the package.
TUNED_FILE = Path(__file__).with_name("defaults.json")
#: The value of each tunable setting for an env and algorithm without a tuned entry.
#: (Keywords, not string keys: ``budget`` is also an info key, spelled only as a constant.)
FALLBACKS: dict[str, Any] = dict(
    timesteps=50_000,
    budget=20,
    train_first=0,
    bc_episodes=0,
    bc_epochs=10,
    net_arch=(64, 64),
    encoding="compact",
    algo_kwargs={},
)
#: A setting left at ``None`` stays so when the setting named here is given instead.
_REPLACED_BY = dict(budget="budget_mix")
#: Keys of a tuned entry that are not ``TrainConfig`` settings: they set up the
#: evaluation that ``train-sb3`` runs after training.
EVALUATION_KEYS = frozenset({"greedy"})


@functools.cache
def _table() -> dict[str, dict[str, dict[str, Any]]]:
    table = json.loads(TUNED_FILE.read_text())
    for env_id, algorithms in table.items():
        if env_id.startswith("_"):
            continue  # a comment
        for algo, settings in algorithms.items():
            unknown = set(settings) - set(FALLBACKS) - EVALUATION_KEYS
            if unknown:
                raise ValueError(f"{TUNED_FILE.name}: {env_id} {algo} has unknown keys {unknown}.")
    return table


def tuned(env_id: str, algo: str) -> dict[str, Any]:
    """Return the tuned entry of ``env_id`` and ``algo`` (empty if it has none)."""
    return dict(_table().get(env_id, {}).get(algo, {}))


def compact_encoding(env_id: str) -> dict[str, Any]:
    """Return the ``chars`` encoding of the env's compact view, or of the whole text."""
    env = gym.make(env_id)
    try:
        if isinstance(env.unwrapped, CompactView):
            return {"mode": "chars", **env.unwrapped.compact_view()}
        return {"mode": "chars"}
    finally:
        env.close()


def cli_algo_kwargs(env_id: str, algo: str, given: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return ``--algo-kwargs`` laid over the tuned ones (``None`` if none were given)."""
    if given is None:
        return None
    return {**tuned(env_id, algo).get("algo_kwargs", {}), **given}


def cli_encoding(env_id: str, algo: str, given: dict[str, Any]) -> dict[str, Any]:
    """Return the encoding flags ``given`` laid over the tuned (or compact) encoding.

    A different ``mode`` starts from that mode alone; a setting another mode
    does not read (``charset`` outside ``chars``, ``dim`` outside ``hashing``,
    ``tokenizer`` outside ``tokens``) is dropped.
    """
    base = tuned(env_id, algo).get("encoding", FALLBACKS["encoding"])
    base = compact_encoding(env_id) if base == "compact" else dict(base)
    if given.get("mode", base["mode"]) != base["mode"]:
        base = {}
    encoding = {**base, **given}
    for name, mode in (("charset", "chars"), ("dim", "hashing"), ("tokenizer", "tokens")):
        if encoding["mode"] != mode:
            encoding.pop(name, None)
    return encoding


def resolve(config: Any) -> tuple[str, ...]:
    """Fill the settings of ``config`` left at ``None``; return the names taken from the table.

    ``budget`` counts as left only when ``budget_mix`` is ``None`` too.
    """
    entry = tuned(config.env_id, config.algo)
    taken = []
    for name, fallback in FALLBACKS.items():
        replaced = _REPLACED_BY.get(name)
        if getattr(config, name) is not None or getattr(config, replaced or name) is not None:
            continue
        value = entry.get(name, fallback)
        if name in entry:
            taken.append(name)
        if isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, dict):
            value = dict(value)
        setattr(config, name, value)
    if config.encoding == "compact":
        config.encoding = compact_encoding(config.env_id)
    return tuple(taken)


def describe(config: Any, greedy: bool | None = None) -> list[str]:
    """Return readable lines of the resolved settings, saying which came from the table."""
    source = f"{TUNED_FILE.name} [{config.env_id}, {config.algo}]"
    tuned_names = set(config.tuned)
    lines = [
        f"settings of {config.env_id} ({config.algo}); * = tuned, from {source}"
        if tuned_names
        else f"settings of {config.env_id} ({config.algo}): no tuned entry, generic defaults"
    ]
    shown = [name for name in FALLBACKS if not name.startswith("bc_")]
    for name in (*shown[:2], *_REPLACED_BY.values(), *shown[2:], "n_envs", "gamma"):
        value = getattr(config, name)
        if name == "budget_mix" and value is None:
            continue
        mark = "*" if name in tuned_names else " "
        lines.append(f"  {mark} {name} = {json.dumps(value, default=list)}")
    if greedy is not None:
        lines.append(f"    evaluation acts {'greedily' if greedy else 'by sampling'}")
    if config.bc_episodes:
        mark = "*" if "bc_episodes" in tuned_names else " "
        lines.append(
            f"  {mark} behaviour-cloning warm start from the oracle: ON ({config.bc_episodes} "
            f"NoisyOracleAgent episodes, epsilon {config.bc_epsilon}, {config.bc_epochs} "
            "epochs; --bc-episodes 0 turns it off)"
        )
    else:
        lines.append("    behaviour-cloning warm start: off")
    return lines
