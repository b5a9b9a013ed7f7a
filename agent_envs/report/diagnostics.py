"""A run's diagnostics as tables: how its replies fail, how it recovers, and its step quality.

What is shown is what the result's ``diagnostics`` holds (see
:mod:`agent_envs.evaluation.diagnostics`): the reply rates always, the oracle
figures (decision quality, per-error recovery, success after an error) when
the run had them, and the step quality when it was measured.  Where the
env's oracle is privileged (it sees what the agent cannot), every figure it
judges is labelled so, as in the terminal table.
"""

from __future__ import annotations

from typing import Any

from agent_envs.report.cells import attrs, name, number, raw_number, text
from agent_envs.report.inputs import Run

__all__ = ["diagnostics_block"]


def _row(label: str, key: str, value: Any, note: str = "") -> str:
    data = attrs(data_diag=key, data_value=raw_number(value))
    extra = f' <span class="ci">{note}</span>' if note else ""
    return f'<tr><th scope="row">{label}</th><td{data}>{number(value)}{extra}</td></tr>'


def _rates(diagnostics: dict[str, Any]) -> list[str]:
    """The single-number rows: replies, decision quality and step quality."""
    rows = [
        _row("invalid-action rate", "invalid_action_rate", diagnostics.get("invalid_action_rate")),
        _row("unparsable rate", "unparsable_rate", diagnostics.get("unparsable_rate")),
    ]
    mark = _privileged(diagnostics)
    if "decision_quality" in diagnostics:
        rows.append(_row(f"decision quality{mark}", "decision_quality",
                         diagnostics.get("decision_quality"), "of all judged turns"))  # fmt: skip
        rows.append(_row(f"decision quality, valid turns{mark}", "decision_quality_valid",
                         diagnostics.get("decision_quality_valid")))  # fmt: skip
    step = diagnostics.get("step_quality")
    if isinstance(step, dict):
        rows.append(_row(f"step quality{mark}", "step_quality", step.get("optimal_rate"),
                         f"optimal on {text(step.get('states'))} reference states"))  # fmt: skip
        rows.append(_row(f"step quality, recovery states{mark}", "step_quality_recovery",
                         step.get("recovery_optimal_rate")))  # fmt: skip
    return rows


def _privileged(diagnostics: dict[str, Any]) -> str:
    """The label of a figure judged by a privileged oracle: `` (privileged oracle)`` or none."""
    return " (privileged oracle)" if diagnostics.get("privileged_oracle") else ""


def _cell(key: str, t: int, value: Any, note: str = "") -> str:
    data = attrs(data_diag=key, data_t=t, data_value=raw_number(value))
    extra = f' <span class="ci">{note}</span>' if note else ""
    return f"<td{data}>{number(value)}{extra}</td>"


def _per_budget(diagnostics: dict[str, Any], budgets: list[int]) -> str:
    """Per T: dead ends, per-error recovery and success after an error, side by side."""
    dead = diagnostics.get("dead_end_rate") or []
    recovery = diagnostics.get("error_recovery") or []
    after = diagnostics.get("success_after_error") or []
    head = '<tr><th scope="col">T</th><th scope="col">dead-end rate</th>'
    if recovery:
        mark = _privileged(diagnostics)
        head += (
            f'<th scope="col">per-error recovery{mark}</th>'
            f'<th scope="col">success after an error{mark}</th>'
        )
    rows = [head + "</tr>"]
    for j, t in enumerate(budgets):
        cells = _cell("dead_end_rate", t, dead[j] if j < len(dead) else None)
        if j < len(recovery) and j < len(after):
            item, later = recovery[j], after[j]
            recovered = (
                f"({text(item.get('recovered'))}/{text(item.get('recoverable'))} recovered, "
                f"{text(item.get('fatal'))} fatal)"
            )
            cells += _cell("error_recovery", t, item.get("rate"), recovered)
            cells += _cell(
                "success_after_error", t, later.get("success_rate"),
                f"(n={text(later.get('episodes'))})",
            )  # fmt: skip
        rows.append(f'<tr><th scope="row">T={t}</th>{cells}</tr>')
    return f'<table class="diag">{"".join(rows)}</table>'


def diagnostics_block(run: Run) -> str:
    """Return ``run``'s diagnostics (or a note that it kept none) and its policy errors."""
    result = run.result
    data = attrs(data_kind="diagnostics", data_env=result.env_id, data_agent=run.label)
    parts = [f'<div class="diagnostics"{data}><h4>{name(run.label)}</h4>']
    if result.diagnostics:
        parts.append(f'<table class="diag">{"".join(_rates(result.diagnostics))}</table>')
        parts.append(_per_budget(result.diagnostics, result.budgets))
    else:
        parts.append('<p class="note">This run kept no diagnostics.</p>')
    if result.errors:
        parts.append(f'<p class="note">{text(result.error_summary())}</p>')
    parts.append("</div>")
    return "".join(parts)
