"""Read the files ``agent-envs report`` is given: eval, compare and bench results, and run logs.

Every file is told apart by its ``format`` key, so one command takes any mix;
a file that is none of these is a user error (one line, exit status 2).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation.compare import CompareResult
from agent_envs.evaluation.result import EvalResult
from agent_envs.files import read_json_input
from wrappers.errors import InvalidValue

__all__ = ["BENCH_FORMAT", "COMPARE_FORMAT", "Inputs", "Run", "load_inputs"]

#: The format tags of the results a report reads (eval results of both formats load).
COMPARE_FORMAT = "agent-envs-compare/1"
BENCH_FORMAT = "agent-envs-bench/1"
_RESULT_FORMATS = ("agent-envs-result/1", "agent-envs-result/2")
#: The arrays of a comparison, ``None`` (a cell outside a Holm family) read as nan.
_COMPARE_ARRAYS = ("diff", "ci_low", "ci_high", "p_value", "p_adjusted")


@dataclass
class Run:
    """One agent's result on one env, with where it came from and the run logs found for it."""

    label: str
    source: str
    result: EvalResult
    logs: list[Path] = field(default_factory=list)


@dataclass
class Inputs:
    """Everything a page shows: the runs, the comparisons, the bench results and the logs."""

    sources: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    compares: list[tuple[str, CompareResult]] = field(default_factory=list)
    benches: list[dict[str, Any]] = field(default_factory=list)
    #: Each run log to read, and whether the user named it (an unreadable one is
    #: then an error; one merely found beside a result is skipped with a note).
    logs: list[tuple[Path, bool]] = field(default_factory=list)


def read_json(path: Path) -> Any:
    """Return the JSON in ``path``, or raise a one-line :class:`InvalidValue`."""
    return read_json_input(path, "result", " Give an eval, compare or bench result.")


def load_inputs(
    paths: list[str | os.PathLike[str]], logs: list[str | os.PathLike[str]] = ()
) -> Inputs:
    """Read every result file in ``paths`` and note the run logs: given, or found beside them."""
    inputs = Inputs()
    for name in paths:
        path = Path(name)
        _add_file(inputs, path, read_json(path))
        inputs.sources.append(os.fspath(path))
    _label_runs(inputs.runs)
    names = [bench["label"] for bench in inputs.benches]
    for bench in inputs.benches:  # two benches of one agent name: their files tell them apart
        if names.count(bench["label"]) > 1:
            bench["label"] = f"{bench['label']} ({Path(bench['source']).stem})"
    found = [(Path(log), True) for log in logs]
    found += [(log, False) for run in inputs.runs for log in run.logs]
    seen: set[Path] = set()
    for log, given in found:
        if log.resolve() not in seen:
            seen.add(log.resolve())
            inputs.logs.append((log, given))
    return inputs


def _add_file(inputs: Inputs, path: Path, data: Any) -> None:
    """Add the result in ``data`` (read from ``path``) to ``inputs``, by its format."""
    fmt = data.get("format") if isinstance(data, dict) else None
    if fmt in _RESULT_FORMATS:
        try:
            result = EvalResult.from_dict(data)
        except ValueError as exc:
            raise InvalidValue(f"{path}: {exc}") from None
        inputs.runs.append(Run(result.agent, path.name, result, _logs_of(result, path)))
    elif fmt == COMPARE_FORMAT:
        inputs.compares.append((path.name, _compare_from_dict(data, path)))
    elif fmt == BENCH_FORMAT:
        inputs.runs.extend(_bench_runs(data, path))
        inputs.benches.append({**data, "source": path.name, "label": str(data.get("agent"))})
    else:
        what = f"its format is {fmt!r}" if isinstance(fmt, str) else "it has no format key"
        raise InvalidValue(
            f"{path} is not an eval, compare or bench result of agent-envs ({what}); give a "
            "JSON written by `agent-envs eval --out`, `compare --out` or `bench`."
        )


def _compare_from_dict(data: dict[str, Any], path: Path) -> CompareResult:
    """Rebuild a :class:`CompareResult` from the JSON ``compare --out`` wrote."""
    fields = {
        key: value for key, value in data.items() if key in CompareResult.__dataclass_fields__
    }
    try:
        for name in _COMPARE_ARRAYS:
            if fields.get(name) is not None:
                fields[name] = np.asarray(fields[name], dtype=float)
        result = CompareResult(**fields)
        grid = (len(result.ks), len(result.budgets))
        if any(getattr(result, name).shape != grid for name in ("diff", "ci_low", "ci_high")):
            raise ValueError(f"diff and its interval are not {grid[0]}x{grid[1]} (K x T)")
        result.wins()  # the marks the page shows; a malformed p-value array fails here
    except (TypeError, ValueError) as exc:
        raise InvalidValue(f"{path}: malformed comparison ({exc}).") from None
    return result


def _bench_runs(data: dict[str, Any], path: Path) -> list[Run]:
    """Return a bench result's runs, one per env id, after checking its score's shape."""
    try:
        score, results = data["score"], data["results"]
        for name in ("tight", "generous", "budget_gap"):
            [float(score[name][key]) for key in ("value", "low", "high")]
        families = score["per_family"]
        if not isinstance(families, dict) or not isinstance(results, dict):
            raise TypeError("per_family and results must be JSON objects")
        if not all(isinstance(row, dict) for row in families.values()):
            raise TypeError("each family's row must be a JSON object")
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidValue(f"{path}: malformed bench result (missing or bad {exc}).") from None
    runs = []
    for env_id, item in results.items():
        try:
            result = EvalResult.from_dict(item)
        except ValueError as exc:
            raise InvalidValue(f"{path}: {env_id}: {exc}") from None
        beside = path.parent / "logs" / f"{env_id.replace('/', '__')}.jsonl"
        runs.append(Run(str(data.get("agent")), path.name, result, _logs_of(result, path, beside)))
    return runs


def _logs_of(result: EvalResult, path: Path, *candidates: Path) -> list[Path]:
    """Return the run log of ``result`` where one exists: beside it, or where its settings say."""
    named = result.settings.log_path
    if named:
        candidates = (*candidates, Path(named), path.parent / named)
    for candidate in candidates:
        if candidate.is_file():
            return [candidate]
    return []


def _label_runs(runs: list[Run]) -> None:
    """Tell apart two runs of one env with the same agent name by their file's name."""
    for run in runs:
        twins = [
            other
            for other in runs
            if other.result.env_id == run.result.env_id and other.label == run.label
        ]
        if len(twins) > 1:
            for twin in twins:
                twin.label = f"{twin.label} ({Path(twin.source).stem})"
