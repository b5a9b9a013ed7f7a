"""The bench results' part of a report: the score tables and the per-family table.

Every bench result given is shown, by its label (its agent, model and
settings, :mod:`agent_envs.report.labels`):

* the suite's score table holds the whole-suite results only; a result of
  some rows only (``"partial": true``, ``bench --only``) is marked partial and
  goes in a table of its own, since a score over some rows is comparable
  with neither the suite's score nor another partial one;
* the per-family table joins every result's rows: each family any result
  played, in the released suite's order (in the order first seen, for a
  suite this version does not ship), and under it each agent that played
  it, with its tight, generous and budget gap, each with its 95% interval
  (:func:`agent_envs.bench.family_scores`).

A page needs no copy of a suite: each row's env id and budgets come from the
results themselves.
"""

from __future__ import annotations

from typing import Any

from agent_envs.bench import BOOTSTRAP, family_scores
from agent_envs.report.cells import DIVERGING, attrs, cell_style, name, number, raw_number, text
from wrappers.errors import UserInputError

__all__ = ["bench_section"]

_SCORES = (("tight", "tight"), ("generous", "generous"), ("budget_gap", "budget gap"))
_PARTIAL = ' <span class="partial">partial</span>'


def _suite_order(suite: str) -> dict[str, int]:
    """Each family's place in the released suite ``suite`` (empty for an unknown suite)."""
    from agent_envs.suites import load_suite

    try:
        entries = load_suite(suite).entries
    except UserInputError:
        return {}
    return {entry.family: index for index, entry in enumerate(entries)}


def _families(suite: str, benches: list[dict[str, Any]]) -> list[tuple[str, str, int, int]]:
    """Return ``(family, env id, tight T, generous T)`` of every row any bench played."""
    rows: dict[str, tuple[str, int, int]] = {}
    for bench in benches:
        for family, env_id in zip(bench["score"]["per_family"], bench["results"], strict=False):
            if family not in rows:
                budgets = bench["results"][env_id]["settings"]["budgets"]
                rows[family] = (env_id, budgets[0], budgets[-1])
    order = _suite_order(suite)
    first_seen = list(rows)
    ranked = sorted(rows, key=lambda f: (order.get(f, len(order)), first_seen.index(f)))
    return [(family, *rows[family]) for family in ranked]


def _score_cell(label: str, key: str, item: dict[str, float], **place: str) -> str:
    """One score with its interval: shown as text, carried exactly in ``data-`` attributes."""
    signed = key == "budget_gap"
    value, low, high = item["value"], item["low"], item["high"]
    data = attrs(data_agent=label, **place, data_value=raw_number(value),
                 data_low=raw_number(low), data_high=raw_number(high))  # fmt: skip
    style = cell_style((value + 1) / 2, DIVERGING) if signed else cell_style(value)
    return (
        f'<td class="cell"{data} style="{style}"><span class="v">{number(value, signed)}</span> '
        f'<span class="ci">[{number(low, signed)}, {number(high, signed)}]</span></td>'
    )


def _agent(bench: dict[str, Any]) -> str:
    return name(bench["label"]) + (_PARTIAL if bench.get("partial") else "")


def _suite_table(suite: str, benches: list[dict[str, Any]]) -> str:
    head = "".join(f'<th scope="col">{label}</th>' for _, label in _SCORES)
    rows = [
        '<tr><th scope="col">family</th><th scope="col">env id</th><th scope="col">T tight</th>'
        f'<th scope="col">T generous</th><th scope="col">agent</th>{head}</tr>'
    ]
    for family, env_id, tight, generous in _families(suite, benches):
        played = [
            b for b in benches if family in b["score"]["per_family"] and env_id in b["results"]
        ]
        for index, bench in enumerate(played):
            result = bench["results"][env_id]
            budgets = result["settings"]["budgets"]  # the suite's, as the first result's
            scores = family_scores(result, budgets[0], budgets[-1])
            cells = "".join(
                _score_cell(bench["label"], key, scores[key], data_family=family, data_budget=key)
                for key, _ in _SCORES
            )
            span = f' rowspan="{len(played)}"'
            row = (
                f'<th scope="rowgroup"{span}>{text(family)}</th><td{span}><code>{name(env_id)}'
                f"</code></td><td{span}>{text(tight)}</td><td{span}>{text(generous)}</td>"
                if index == 0
                else ""
            )
            rows.append(f'<tr>{row}<th scope="row">{_agent(bench)}</th>{cells}</tr>')
    caption = (
        f"Suite {text(suite)} per family: Pass@(1,T) at each row's tight and generous T and the "
        "budget gap (generous - tight), each agent that played the row on a line; 95% intervals "
        "over tasks (tight and generous: the result's own interval of that cell; budget gap: a "
        f"paired bootstrap, {BOOTSTRAP} resamples). A partial result shows the rows it ran."
    )
    return (
        f'<table class="suite"{attrs(data_kind="suite", data_suite=suite)}>'
        f"<caption>{caption}</caption>{''.join(rows)}</table>"
    )


def _cost(bench: dict[str, Any]) -> str:
    """The bench's own CPU seconds, and its server's where its server file measured them."""
    seconds = bench.get("seconds") or {}
    cpu = sum(float(s.get("cpu", 0)) for s in seconds.values() if isinstance(s, dict))
    server = (bench.get("server") or {}).get("server_cpu_s")
    extra = f" + {number(server, digits=1)} in its server" if raw_number(server) else ""
    return f"<td>{cpu:.1f}{extra}</td>"


_COST_NOTE = (
    "Bench CPU seconds are the bench process's own: a model served by another process (a "
    "llama.cpp or vLLM server) is not in them, and is added after + where the bench's "
    "server.json measured it"
)


def _score_table(suite: str, benches: list[dict[str, Any]], partial: bool) -> str:
    head = "".join(f'<th scope="col">{label}</th>' for _, label in _SCORES)
    rows_col = '<th scope="col">rows</th>' if partial else ""
    cost = '<th scope="col">bench CPU seconds</th>'
    rows = [f'<tr><th scope="col">agent</th>{rows_col}{head}{cost}</tr>']
    for bench in benches:
        cells = "".join(
            _score_cell(bench["label"], key, bench["score"][key], data_score=key)
            for key, _ in _SCORES
        )
        ran = f"<td>{text(', '.join(bench['score']['per_family']))}</td>" if partial else ""
        rows.append(f'<tr><th scope="row">{_agent(bench)}</th>{ran}{cells}{_cost(bench)}</tr>')
    if partial:
        caption = (
            f"Partial results of suite {text(suite)}: each ran some rows only (bench --only), "
            "so its score is the mean over those rows, comparable with neither the suite's "
            "score nor another partial result; 95% bootstrap interval over tasks. "
        )
        kind = "partial-score"
    else:
        caption = (
            f"Suite {text(suite)} score (whole-suite results): mean Pass@(1,T) over families, 95% "
            "bootstrap interval over tasks; budget gap = generous - tight. "
        )
        kind = "score"
    return (
        f'<table class="score"{attrs(data_kind=kind, data_suite=suite)}>'
        f"<caption>{caption}{_COST_NOTE}</caption>{''.join(rows)}</table>"
    )


def bench_section(benches: list[dict[str, Any]]) -> str:
    """Return the bench part of the page: per suite version, its score tables and family table."""
    suites: dict[str, list[dict[str, Any]]] = {}
    for bench in benches:
        suites.setdefault(str(bench.get("suite")), []).append(bench)
    parts = ['<section id="bench" class="bench"><h2>Benchmark suite</h2>']
    for suite, group in suites.items():
        whole = [bench for bench in group if not bench.get("partial")]
        partial = [bench for bench in group if bench.get("partial")]
        if whole:
            parts.append(_score_table(suite, whole, partial=False))
        if partial:
            parts.append(_score_table(suite, partial, partial=True))
        parts.append(_suite_table(suite, group))
    parts.append("</section>")
    return "".join(parts)
