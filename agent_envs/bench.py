"""``agent-envs bench``: one agent over a whole versioned suite, and its score.

:func:`run_bench` evaluates an agent on every env id of a suite
(:mod:`agent_envs.suites`) with the evaluator, each id with its own run log,
so a stopped bench resumes with nothing lost or repeated.  Its result is one
JSON (:data:`BENCH_FORMAT`): the suite version, the agent, every id's whole
:class:`~agent_envs.evaluation.EvalResult` (surface, intervals, diagnostics),
each id's CPU and wall seconds summed over every process that ran it
(:func:`row_seconds`), each episode's cost (:data:`EPISODE_COST`, read
back from the id's run log) and the score (:func:`bench_score`).

The score, defined in ``docs/bench.md``:

* ``tight``: Pass@(1, T_tight) averaged over the suite's rows (one env id
  per family, and slippery ice), where T_tight is each row's tight budget
  (about the oracle's turns);
* ``generous``: the same at each row's generous budget (4 x T_tight);
* ``budget_gap``: generous - tight, how much the agent's success depends on
  being given room;

each with a 95% bootstrap interval over tasks (tasks resampled within each
row, rows averaged, ``BOOTSTRAP`` times, seeded).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.suites import Suite
from wrappers.protocol import BUDGET

__all__ = [
    "BENCH_FORMAT",
    "BOOTSTRAP",
    "EPISODE_COST",
    "bench_score",
    "episode_costs",
    "family_scores",
    "row_seconds",
    "run_bench",
]

#: The format tag of a bench result.
BENCH_FORMAT = "agent-envs-bench/1"
#: Bootstrap resamples of the score's intervals.
BOOTSTRAP = 2000
#: The columns of a bench result's per-episode costs: the episode's key, then
#: the prompt and reply tokens its agent counted (``None`` where it cannot
#: count) and its wall and CPU seconds (see ``EpisodeRecord``).
EPISODE_COST = ("task", "sample", BUDGET, "tokens_read", "tokens_generated", "wall_s", "cpu_s")


def _slug(env_id: str) -> str:
    return env_id.replace("/", "__")


def run_bench(
    suite: Suite,
    make_policy: Callable[[], Any],
    agent_name: str,
    out: Path,
    log: Callable[[str], object] = print,
    history: str | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Evaluate ``make_policy()`` on every id of ``suite``; return the bench result.

    Each id's episodes go to ``out/logs/<id>.jsonl`` (a rerun resumes them);
    ``history`` (``"raw"`` or ``"action"``) gives the agent the dialogue in
    ``info["messages"]``, as ``eval --history --history-record`` does (an LLM
    agent sees only the latest observation without it); ``settings`` are
    further :class:`~agent_envs.evaluation.EvalSettings` fields (``backend``,
    ``workers``, ``progress`` ...).
    """
    from agent_envs.evaluation import EvalSettings

    (out / "logs").mkdir(parents=True, exist_ok=True)
    results, seconds, costs = {}, {}, {}
    for index, entry in enumerate(suite.entries, 1):
        log(f"[{index}/{len(suite.entries)}] {entry.env_id}: {len(entry.tasks)} tasks x "
            f"{suite.samples} attempts, T {','.join(map(str, entry.budgets))}")  # fmt: skip
        cpu, wall = time.process_time(), time.perf_counter()
        entry_settings = EvalSettings(
            ks=list(suite.ks),
            budgets=list(entry.budgets),
            tasks=list(entry.tasks),
            samples=suite.samples,
            log_path=os.fspath(out / "logs" / f"{_slug(entry.env_id)}.jsonl"),
            agent_name=agent_name,
            env_name=entry.env_id,
            **settings,
        )
        result = _evaluate(make_policy(), entry.env_id, history, entry_settings)
        here = (time.process_time() - cpu, time.perf_counter() - wall)
        results[entry.env_id] = result
        episodes = _episode_lines(Path(entry_settings.log_path))
        remote = result["settings"]["backend"] != "local"  # played by Ray workers
        fresh = result["timing"]["episodes_run"]
        seconds[entry.env_id] = row_seconds(episodes, fresh, *here, elsewhere=remote)
        costs[entry.env_id] = _cost_rows(episodes)
    return {
        "format": BENCH_FORMAT,
        "suite": suite.version,
        # A bench of some rows only (--only): its score covers those rows, not the suite.
        "partial": suite.partial,
        "history": history,
        "rows": [entry.env_id for entry in suite.entries],
        "agent": agent_name,
        "results": results,
        "seconds": seconds,
        "episode_columns": list(EPISODE_COST),
        "episodes": costs,
        "score": bench_score(suite, results),
    }


def episode_costs(log: Path) -> list[list[Any]]:
    """Return one :data:`EPISODE_COST` row per episode of a run log, in the log's order.

    The log is the one this bench just wrote and closed; an episode of a log
    written before costs were recorded has ``None`` in their columns.
    """
    return _cost_rows(_episode_lines(log))


def _cost_rows(lines: list[dict[str, Any]]) -> list[list[Any]]:
    return [[line.get(column) for column in EPISODE_COST] for line in lines]


def _episode_lines(log: Path) -> list[dict[str, Any]]:
    """Every episode line of a run log this bench just wrote and closed, in its order."""
    with log.open(encoding="utf-8") as handle:
        next(handle)  # the header
        return [json.loads(line) for line in handle]


def _seconds(line: Mapping[str, Any], key: str) -> float:
    value = line.get(key)
    return float(value) if isinstance(value, (int, float)) and value >= 0 else 0.0


def _span(lines: list[Mapping[str, Any]]) -> float:
    """The wall seconds during which any of ``lines``' episodes was being played.

    An episode with ``ended_at`` is the interval ``[ended_at - wall_s,
    ended_at]``, and overlapping intervals (episodes in lockstep) count once;
    one from a log written before ``ended_at`` counts its ``wall_s`` whole.
    """
    intervals, total = [], 0.0
    for line in lines:
        wall, end = _seconds(line, "wall_s"), line.get("ended_at")
        if isinstance(end, (int, float)):
            intervals.append((end - wall, end))
        else:
            total += wall
    reach = float("-inf")
    for start, end in sorted(intervals):
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total


def row_seconds(
    episodes: list[Mapping[str, Any]],
    fresh: int,
    cpu: float,
    wall: float,
    elsewhere: bool = False,
) -> dict[str, float]:
    """Return a row's CPU and wall seconds, summed over every process that ran it.

    ``episodes`` are the row's run-log lines in the log's order, of which the
    last ``fresh`` are this process's run, which took ``cpu`` and ``wall``
    seconds here (building the agent, playing, counting).  The earlier lines
    are episodes an earlier, stopped process played: their ``cpu_s`` and the
    wall time they span (:func:`_span`) are added.  With ``elsewhere`` (Ray),
    this run's episodes were played in other processes: their ``cpu_s`` is
    added too (their wall time is within this process's).  What a stopped
    process spent outside its finished episodes (loading its model, an
    episode cut short) is in no log, and so in no sum.

    >>> earlier = [{"cpu_s": 2.0, "wall_s": 3.0, "ended_at": 10.0},
    ...            {"cpu_s": 2.0, "wall_s": 3.0, "ended_at": 11.0}]
    >>> row_seconds([*earlier, {"cpu_s": 1.0, "wall_s": 1.0}], 1, 1.5, 2.0)
    {'cpu': 5.5, 'wall': 6.0}
    """
    before = episodes[: len(episodes) - fresh]
    cpu += sum(_seconds(line, "cpu_s") for line in before)
    if elsewhere:
        cpu += sum(_seconds(line, "cpu_s") for line in episodes[len(episodes) - fresh :])
    return {"cpu": round(cpu, 2), "wall": round(wall + _span(before), 2)}


def _evaluate(policy: Any, env_id: str, history: str | None, settings: Any) -> dict[str, Any]:
    """One row's result, as a dict: the env alone, or with the dialogue kept (``history``)."""
    from agent_envs.env_stack import StackOptions, StackRecipe
    from agent_envs.evaluation import evaluate

    env: Any = env_id
    if history is not None:
        env = StackRecipe(env_id, StackOptions(history=True, record=history))
    return evaluate(policy, env, settings).to_dict()


def _pass1(result: Mapping[str, Any], budget: int) -> np.ndarray:
    """Per task: Pass@(1, budget), the share of attempts that succeeded within it."""
    column = result["settings"]["budgets"].index(budget)
    counts = np.asarray(result["success_counts"], dtype=float)[:, column]
    return counts / result["settings"]["samples"]


def bench_score(
    suite: Suite, results: Mapping[str, Mapping[str, Any]], seed: int = 0
) -> dict[str, Any]:
    """Return the suite score: tight, generous and the budget gap, with 95% intervals.

    ``results`` maps each env id of the suite to its result's ``to_dict()``.
    """
    tight = [_pass1(results[e.env_id], e.tight) for e in suite.entries]
    generous = [_pass1(results[e.env_id], e.generous) for e in suite.entries]
    rng = np.random.default_rng(seed)
    draws = {"tight": [], "generous": []}
    for _ in range(BOOTSTRAP):
        picks = [rng.integers(0, len(values), len(values)) for values in tight]
        draws["tight"].append(np.mean([v[p].mean() for v, p in zip(tight, picks, strict=True)]))
        draws["generous"].append(
            np.mean([v[p].mean() for v, p in zip(generous, picks, strict=True)])
        )
    values = {
        "tight": (float(np.mean([v.mean() for v in tight])), np.array(draws["tight"])),
        "generous": (float(np.mean([v.mean() for v in generous])), np.array(draws["generous"])),
    }
    values["budget_gap"] = (
        values["generous"][0] - values["tight"][0],
        values["generous"][1] - values["tight"][1],
    )
    score = {
        name: {
            "value": value,
            "low": float(np.quantile(d, 0.025)),
            "high": float(np.quantile(d, 0.975)),
        }
        for name, (value, d) in values.items()
    }
    score["per_family"] = {
        e.family: {"tight": float(t.mean()), "generous": float(g.mean())}
        for e, t, g in zip(suite.entries, tight, generous, strict=True)
    }
    return score


def _cell(result: Mapping[str, Any], budget: int) -> tuple[float, float]:
    """The result's own interval of Pass@(1, budget), as its surface's cell holds it."""
    settings = result["settings"]
    if 1 not in settings["ks"]:
        return (float("nan"), float("nan"))
    i, j = settings["ks"].index(1), settings["budgets"].index(budget)
    return (float(result["ci_low"][i][j]), float(result["ci_high"][i][j]))


def family_scores(
    result: Mapping[str, Any], tight: int, generous: int, seed: int = 0
) -> dict[str, dict[str, float]]:
    """Return one row's tight, generous and budget gap, each with its 95% interval.

    ``result`` is the row's result (``to_dict()``).  Tight and generous are
    the Pass@(1,T) of :func:`bench_score`'s ``per_family`` with the result's
    own interval of that cell (``ci_low``/``ci_high``: a bootstrap over
    tasks); the gap's interval is a paired bootstrap of the per-task gaps
    (:data:`BOOTSTRAP` resamples, seeded), as the score's.
    """
    low, high = _pass1(result, tight), _pass1(result, generous)
    gaps = high - low
    draws = gaps[np.random.default_rng(seed).integers(0, len(gaps), (BOOTSTRAP, len(gaps)))]
    draws = draws.mean(axis=1)
    scores = {}
    for name, values, budget in (("tight", low, tight), ("generous", high, generous)):
        ci_low, ci_high = _cell(result, budget)
        scores[name] = {"value": float(values.mean()), "low": ci_low, "high": ci_high}
    scores["budget_gap"] = {
        "value": scores["generous"]["value"] - scores["tight"]["value"],
        "low": float(np.quantile(draws, 0.025)),
        "high": float(np.quantile(draws, 0.975)),
    }
    return scores


def score_table(result: Mapping[str, Any]) -> str:
    """The bench result as a table: each family at its tight and generous budget, then the score."""
    score = result["score"]
    partial = f" (partial: {len(result['rows'])} rows)" if result.get("partial") else ""
    lines = [f"{result['agent']} on suite {result['suite']}{partial}", ""]
    lines.append(f"{'family':<20} {'tight':>7} {'generous':>9}")
    for family, row in score["per_family"].items():
        lines.append(f"{family:<20} {row['tight']:>7.3f} {row['generous']:>9.3f}")
    lines.append("")
    for name in ("tight", "generous", "budget_gap"):
        s = score[name]
        lines.append(f"{name:<20} {s['value']:.3f} [{s['low']:.3f}, {s['high']:.3f}]")
    return "\n".join(lines)


def write_result(result: Mapping[str, Any], path: Path) -> None:
    """Write a bench result atomically as JSON."""
    from agent_envs.files import atomic_write_text

    atomic_write_text(path, json.dumps(result, indent=1) + "\n")
