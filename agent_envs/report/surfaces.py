"""One env's part of a report: each agent's Pass@(K,T) heatmap, the differences, the diagnostics.

Every heatmap is an HTML table whose cells show their value and 95% interval
as text (readable without a mouse, and by a screen reader) and carry them
exactly in ``data-`` attributes, which the tests read back.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_envs.evaluation.compare import CompareResult, compare
from agent_envs.report.cells import DIVERGING, attrs, cell_style, name, number, raw_number, text
from agent_envs.report.diagnostics import diagnostics_block
from agent_envs.report.inputs import Run
from wrappers.errors import UserInputError

__all__ = ["anchor", "difference_table", "env_section", "surface_table"]


def anchor(env_id: str) -> str:
    """Return the page anchor of an env's section (letters, digits and dashes only).

    >>> anchor("agent_envs/Maze-7x7-v0")
    'env-agent-envs-maze-7x7-v0'
    """
    return "env-" + "".join(c if c.isalnum() else "-" for c in env_id.lower())


def _header_row(budgets: Sequence[int]) -> str:
    cols = "".join(f'<th scope="col">T={t}</th>' for t in budgets)
    return f'<tr><th scope="col">K \\ T</th>{cols}</tr>'


def surface_table(run: Run) -> str:
    """Return ``run``'s surface as a heatmap table: value and interval in every cell."""
    result = run.result
    rows = []
    for i, k in enumerate(result.ks):
        cells = []
        for j, t in enumerate(result.budgets):
            value, low, high = (
                float(a[i, j]) for a in (result.surface, result.ci_low, result.ci_high)
            )
            data = attrs(
                data_k=k, data_t=t, data_value=raw_number(value),
                data_low=raw_number(low), data_high=raw_number(high),
            )  # fmt: skip
            cells.append(
                f'<td class="cell"{data} style="{cell_style(value)}">'
                f'<span class="v">{number(value)}</span> '
                f'<span class="ci">[{number(low)}, {number(high)}]</span></td>'
            )
        rows.append(f'<tr><th scope="row">K={k}</th>{"".join(cells)}</tr>')
    caption = (
        f"{name(run.label)}: Pass@(K,T), {text(result.mode)} budget, {len(result.task_ids)} "
        f"tasks x {result.samples} attempts, {result.confidence:.0%} interval over tasks"
    )
    table_attrs = attrs(data_kind="surface", data_env=result.env_id, data_agent=run.label)
    return (
        f'<figure class="run"><table class="heatmap"{table_attrs}><caption>{caption}</caption>'
        f"{_header_row(result.budgets)}{''.join(rows)}</table>"
        f"<figcaption>from {name(run.source)}</figcaption></figure>"
    )


def _criterion(difference: CompareResult) -> str:
    """Say which cells are marked, as :meth:`CompareResult.wins` decides."""
    level = f"{difference.confidence:.0%}"
    if difference.unit == "task":
        kind = "paired" if difference.paired else "unpaired"
        return (
            f"{level} {kind} bootstrap interval over tasks ({difference.n_bootstrap} resamples); "
            "a marked cell's interval excludes 0."
        )
    alpha = f"{1 - difference.confidence:.2g}"
    if difference.p_adjusted is not None:
        rule = (
            f"its Holm-adjusted p-value (family {text(difference.family)}, "
            f"{difference.family_size} tests) is at most {alpha}"
        )
    else:
        rule = f"its seed-level p-value ({text(difference.test)}) is at most {alpha}"
    note = "" if difference.can_be_significant else " With these seeds no cell can be marked."
    return (
        f"{level} hierarchical bootstrap interval (seeds {difference.seeds[0]} vs "
        f"{difference.seeds[1]}, then tasks); a marked cell's interval excludes 0 and {rule}."
        + note
    )


def difference_table(difference: CompareResult, source: str = "") -> str:
    """Return A - B as a diverging heatmap, the significant cells marked with the better side."""
    marks = difference.wins()
    rows = []
    for i, k in enumerate(difference.ks):
        cells = []
        for j, t in enumerate(difference.budgets):
            value = float(difference.diff[i, j])
            low, high = float(difference.ci_low[i, j]), float(difference.ci_high[i, j])
            mark = str(marks[i, j])
            data = attrs(
                data_k=k, data_t=t, data_value=raw_number(value), data_low=raw_number(low),
                data_high=raw_number(high), data_mark=mark,
            )  # fmt: skip
            badge = f' <strong class="mark">{mark} better</strong>' if mark else ""
            cells.append(
                f'<td class="cell{" marked" if mark else ""}"{data} '
                f'style="{cell_style((value + 1) / 2, DIVERGING)}">'
                f'<span class="v">{number(value, signed=True)}</span> <span class="ci">'
                f"[{number(low, signed=True)}, {number(high, signed=True)}]</span>{badge}</td>"
            )
        rows.append(f'<tr><th scope="row">K={k}</th>{"".join(cells)}</tr>')
    table_attrs = attrs(data_kind="difference", data_env=difference.env_id, data_a=difference.a,
                        data_b=difference.b)  # fmt: skip
    caption = f"A - B, A = {name(difference.a)}, B = {name(difference.b)}"
    origin = f" From {name(source)}." if source else ""
    return (
        f'<figure class="run"><table class="heatmap"{table_attrs}><caption>{caption}</caption>'
        f"{_header_row(difference.budgets)}{''.join(rows)}</table>"
        f"<figcaption>{_criterion(difference)}{origin}</figcaption></figure>"
    )


def _differences(runs: list[Run]) -> list[str]:
    """Each later agent against the first on this env, as ``agent-envs compare`` computes it."""
    parts = []
    for other in runs[1:]:
        try:
            difference = compare(runs[0].result, other.result)
        except UserInputError as exc:  # other grids: say why there is no difference
            parts.append(f'<p class="note">No difference of {name(runs[0].label)} and '
                         f"{name(other.label)}: {text(exc)}</p>")  # fmt: skip
            continue
        difference.a, difference.b = runs[0].label, other.label
        parts.append(difference_table(difference))
    return parts


def env_section(env_id: str, runs: list[Run], compares: list[tuple[str, CompareResult]]) -> str:
    """Return the section of one env: heatmaps, differences, then each run's diagnostics."""
    parts = [f'<section id="{anchor(env_id)}" class="env"><h2>{name(env_id)}</h2>']
    if runs:
        parts.append('<div class="row">' + "".join(surface_table(run) for run in runs) + "</div>")
    differences = _differences(runs) + [difference_table(d, source) for source, d in compares]
    if differences:
        parts.append('<h3>Differences</h3><div class="row">' + "".join(differences) + "</div>")
    if runs:
        parts.append('<h3>Diagnostics</h3><div class="row">')
        parts.extend(diagnostics_block(run) for run in runs)
        parts.append("</div>")
    parts.append("</section>")
    return "".join(parts)
