"""A bench result's part of a report: the suite table and the score with its intervals.

The rows follow the bench result itself (its ``results`` and ``per_family``
are both in the suite's order, as :func:`agent_envs.bench.run_bench` wrote
them), so a page needs no copy of the suite to show a result of any version.
"""

from __future__ import annotations

from typing import Any

from agent_envs.report.cells import attrs, cell_style, name, number, raw_number, text

__all__ = ["bench_section"]

_SCORES = (("tight", "tight"), ("generous", "generous"), ("budget_gap", "budget gap"))


def _families(bench: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """Return ``(family, env id, tight T, generous T)`` in the suite's order."""
    rows = []
    for family, env_id in zip(bench["score"]["per_family"], bench["results"], strict=False):
        budgets = bench["results"][env_id]["settings"]["budgets"]
        rows.append((family, env_id, budgets[0], budgets[-1]))
    return rows


def _suite_table(suite: str, benches: list[dict[str, Any]]) -> str:
    head = "".join(
        f'<th scope="col">{name(b["label"])} tight</th><th scope="col">{name(b["label"])} '
        "generous</th>"
        for b in benches
    )
    rows = [
        '<tr><th scope="col">family</th><th scope="col">env id</th><th scope="col">T tight</th>'
        f'<th scope="col">T generous</th>{head}</tr>'
    ]
    for family, env_id, tight, generous in _families(benches[0]):
        cells = ""
        for bench in benches:
            row = bench["score"]["per_family"].get(family, {})
            for budget in ("tight", "generous"):
                value = row.get(budget)
                data = attrs(data_agent=bench["label"], data_family=family, data_budget=budget,
                             data_value=raw_number(value))  # fmt: skip
                cells += f'<td class="cell"{data} style="{cell_style(value)}">{number(value)}</td>'
        rows.append(
            f'<tr><th scope="row">{text(family)}</th><td><code>{name(env_id)}</code></td>'
            f"<td>{text(tight)}</td><td>{text(generous)}</td>{cells}</tr>"
        )
    caption = f"Suite {text(suite)}: Pass@(1,T) per family at its tight and generous budget"
    return (
        f'<table class="suite"{attrs(data_kind="suite", data_suite=suite)}>'
        f"<caption>{caption}</caption>{''.join(rows)}</table>"
    )


def _score_table(suite: str, benches: list[dict[str, Any]]) -> str:
    head = "".join(f'<th scope="col">{label}</th>' for _, label in _SCORES)
    rows = [f'<tr><th scope="col">agent</th>{head}<th scope="col">bench CPU seconds</th></tr>']
    for bench in benches:
        cells = ""
        for key, _ in _SCORES:
            item = bench["score"][key]
            data = attrs(
                data_agent=bench["label"], data_score=key, data_value=raw_number(item["value"]),
                data_low=raw_number(item["low"]), data_high=raw_number(item["high"]),
            )  # fmt: skip
            cells += (
                f'<td{data}><span class="v">{number(item["value"])}</span> <span class="ci">'
                f"[{number(item['low'])}, {number(item['high'])}]</span></td>"
            )
        seconds = bench.get("seconds") or {}
        cpu = sum(float(s.get("cpu", 0)) for s in seconds.values() if isinstance(s, dict))
        rows.append(
            f'<tr><th scope="row">{name(bench["label"])} <span class="ci">'
            f"({text(bench['source'])})</span></th>{cells}<td>{cpu:.1f}</td></tr>"
        )
    caption = (
        f"Suite {text(suite)} score: mean Pass@(1,T) over families, 95% bootstrap interval over "
        "tasks; budget gap = generous - tight. Bench CPU seconds are the bench process's "
        "own: a model served by another process (a llama.cpp or vLLM server) is not in them"
    )
    return (
        f'<table class="score"{attrs(data_kind="score", data_suite=suite)}>'
        f"<caption>{caption}</caption>{''.join(rows)}</table>"
    )


def bench_section(benches: list[dict[str, Any]]) -> str:
    """Return the bench part of the page: per suite version, its score table and suite table."""
    suites: dict[str, list[dict[str, Any]]] = {}
    for bench in benches:
        suites.setdefault(str(bench.get("suite")), []).append(bench)
    parts = ['<section id="bench" class="bench"><h2>Benchmark suite</h2>']
    for suite, group in suites.items():
        parts.append(_score_table(suite, group))
        parts.append(_suite_table(suite, group))
    parts.append("</section>")
    return "".join(parts)
