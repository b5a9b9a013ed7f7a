"""Read the files ``agent-envs report`` is given: eval, compare and bench results, and run logs.

Every file is told apart by its ``format`` key, so one command takes any mix;
a file that is none of these is a user error (one line, exit status 2).

Each result is labelled by its agent, model and settings
(:mod:`agent_envs.report.labels`), never by its file's name.  A bench's run
logs are looked for beside it only (``logs/<id>.jsonl``), so that a page of
committed files is the same whatever else lies around; an eval result's log
is also looked for where its settings name it.
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
from agent_envs.report.labels import agent_label, bench_command, bench_label, unique_labels
from wrappers.errors import InvalidValue
from wrappers.utils.validators import check_number

__all__ = [
    "BENCH_FORMAT",
    "COMPARE_FORMAT",
    "SERVER_FILE",
    "Inputs",
    "LogRef",
    "Run",
    "load_inputs",
]

#: The format tags of the results a report reads (eval results of both formats load).
COMPARE_FORMAT = "agent-envs-compare/1"
BENCH_FORMAT = "agent-envs-bench/1"
_RESULT_FORMATS = ("agent-envs-result/1", "agent-envs-result/2")
#: The file beside a ``bench.json`` that says what served its model and at what
#: CPU cost (``benchmarks/bench_smollm2_server.py`` writes it).
SERVER_FILE = "server.json"
#: What an eval run's missing transcripts note tells the user to run.
EVAL_RERUN = "agent-envs eval ... --log NEW.jsonl --transcripts"
#: The arrays of a comparison, ``None`` (a cell outside a Holm family) read as nan.
_COMPARE_ARRAYS = ("diff", "ci_low", "ci_high", "p_value", "p_adjusted")


@dataclass
class Run:
    """One agent's result on one env, with where it came from and the run logs found for it."""

    label: str
    source: str
    result: EvalResult
    logs: list[Path] = field(default_factory=list)
    #: The bench result it is a row of, or ``None`` for an eval result.
    bench: dict[str, Any] | None = None


@dataclass
class LogRef:
    """A run log to read: whether the user named it (an unreadable one is then an
    error; one merely found beside a result is skipped with a note), whose it is
    and the command that would keep its transcripts."""

    path: Path
    given: bool
    agent: str = ""
    rerun: str = EVAL_RERUN


@dataclass
class Inputs:
    """Everything a page shows: the runs, the comparisons, the bench results and the logs.

    Each bench is its JSON with ``source`` (its file's name), ``label`` and
    ``server`` (the :data:`SERVER_FILE` beside it, or ``None``) added.
    """

    sources: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    compares: list[tuple[str, CompareResult]] = field(default_factory=list)
    benches: list[dict[str, Any]] = field(default_factory=list)
    logs: list[LogRef] = field(default_factory=list)
    #: Per result file: its label before :func:`unique_labels`, its env ids,
    #: its runs and its bench (or ``None``), to be labelled once all are read.
    _labelled: list[tuple[str, frozenset[str], list[Run], dict[str, Any] | None]] = field(
        default_factory=list
    )


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
    _label(inputs)
    found = [LogRef(Path(log), True) for log in logs]
    for run in inputs.runs:
        bench = run.bench
        rerun = EVAL_RERUN if bench is None else bench_command(bench)
        found += [LogRef(log, False, run.label, rerun) for log in run.logs]
    seen: set[Path] = set()
    for ref in found:
        if ref.path.resolve() not in seen:
            seen.add(ref.path.resolve())
            inputs.logs.append(ref)
    return inputs


def _label(inputs: Inputs) -> None:
    """Give every run and bench its final label: #2, #3 where two would share one."""
    labels = unique_labels([(label, envs) for label, envs, _, _ in inputs._labelled])
    for final, (_, _, runs, bench) in zip(labels, inputs._labelled, strict=True):
        for run in runs:
            run.label = final
        if bench is not None:
            bench["label"] = final


def _add_file(inputs: Inputs, path: Path, data: Any) -> None:
    """Add the result in ``data`` (read from ``path``) to ``inputs``, by its format."""
    fmt = data.get("format") if isinstance(data, dict) else None
    if fmt in _RESULT_FORMATS:
        try:
            result = EvalResult.from_dict(data)
        except ValueError as exc:
            raise InvalidValue(f"{path}: {exc}") from None
        label = agent_label(str(result.agent))
        if result.settings.visible_budget:
            label += " visible budget"
        run = Run(label, path.name, result, _logs_of(result, path))
        inputs.runs.append(run)
        inputs._labelled.append((label, frozenset([result.env_id]), [run], None))
    elif fmt == COMPARE_FORMAT:
        difference = _compare_from_dict(data, path)
        difference.a, difference.b = agent_label(difference.a), agent_label(difference.b)
        inputs.compares.append((path.name, difference))
    elif fmt == BENCH_FORMAT:
        runs = _bench_runs(data, path)
        server = _server(path)
        bench = {**data, "source": path.name, "server": server}
        bench["label"] = bench_label(data, server)
        for run in runs:
            run.bench = bench
        inputs.runs.extend(runs)
        inputs.benches.append(bench)
        envs = frozenset(run.result.env_id for run in runs)
        inputs._labelled.append((bench["label"], envs, runs, bench))
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
        for name in ("a", "b", "env_id"):  # the page's labels and anchors
            if not isinstance(getattr(result, name), str):
                raise ValueError(f"{name} must be a string")
        check_number(result.confidence, "confidence", 0.0, 1.0, open_low=True, open_high=True)
        grid = (len(result.ks), len(result.budgets))
        if any(np.shape(getattr(result, name)) != grid for name in ("diff", "ci_low", "ci_high")):
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
        seconds = data.get("seconds") or {}
        if not isinstance(seconds, dict) or not all(isinstance(s, dict) for s in seconds.values()):
            raise TypeError("seconds must map each id to {cpu, wall}")
        [float(row.get(key, 0)) for row in seconds.values() for key in ("cpu", "wall")]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidValue(f"{path}: malformed bench result (missing or bad {exc}).") from None
    runs = []
    for env_id, item in results.items():
        try:
            result = EvalResult.from_dict(item)
        except ValueError as exc:
            raise InvalidValue(f"{path}: {env_id}: {exc}") from None
        results[env_id] = result.to_dict()  # the scores read it: defaults made explicit
        beside = path.parent / "logs" / f"{env_id.replace('/', '__')}.jsonl"
        logs = [beside] if beside.is_file() else []
        runs.append(Run(str(data.get("agent")), path.name, result, logs))
    return runs


def _server(path: Path) -> dict[str, Any] | None:
    """Return the :data:`SERVER_FILE` beside a bench result, if there is one."""
    beside = path.parent / SERVER_FILE
    if not beside.is_file():
        return None
    data = read_json_input(beside, "server file", " It says what served a bench's model.")
    return data if isinstance(data, dict) else None


def _logs_of(result: EvalResult, path: Path) -> list[Path]:
    """Return the run log of an eval result where one exists: where its settings say."""
    named = result.settings.log_path
    if named:
        for candidate in (Path(named), path.parent / named):
            if candidate.is_file():
                return [candidate]
    return []
