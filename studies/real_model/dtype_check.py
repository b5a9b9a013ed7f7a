"""The bfloat16 learning check: does the real model learn as much in bfloat16 as in float32?

``python -m studies.real_model.dtype_check`` reruns the real-model study's
(v3) ``long`` regime for training seeds 0 and 1 with ``dtype`` bfloat16
(:mod:`baselines.llm.models.precision`), everything else as that study launched it,
and compares the held-out Pass@(1,T) with the committed float32 runs of the
same seeds.  Its verdict decides the dtype of the next study.

The tolerance (:data:`CHECK`) was declared in this file before either run:

* ``max_mean_drop``: bfloat16's Pass@(1,T), averaged over the T grid and
  the two seeds, is at most 0.10 below float32's;
* ``keep_gain``: bfloat16's gain over the (float32) base model at the long
  T, averaged over the two seeds, keeps at least 2/3 of float32's (the
  learning gate's own ratio).

Both must hold.  Two seeds cannot show a small difference: float32's seeds 0
and 1 differ from each other by up to 0.19 in one Pass@(1,T) cell, and a
change of dtype changes every sample drawn after the first rounding.  The
check detects a large loss (a third of the gain), which is what would rule
bfloat16 out; it cannot show that the two are equal.

Durable like the study (:mod:`studies.runner`): each run writes its
``job.json`` into ``docs/real_model_study/bf16-check/runs/`` when it ends,
and a rerun skips it; the verdict (``check.json``, ``check.md``) is written
once both have finished.  Run it from a pinned checkout, as the study runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.files import atomic_write_text
from studies import report as kit
from studies.runner import Job, run_jobs

__all__ = ["CHECK", "main", "verdict"]

#: Declared before the runs; see the module docstring.
CHECK = {
    "regime": "long",
    "seeds": (0, 1),
    "dtype": "bfloat16",
    "max_mean_drop": 0.10,
    "keep_gain": 2 / 3,
}
#: The check's folder, inside the study folder that holds the committed float32 runs.
FOLDER = "bf16-check"


def _pass1(record: dict[str, Any]) -> np.ndarray:
    """Per (task, T): the Pass@(1,T) estimate of a run record."""
    result = record["result"]
    return np.asarray(result["success_counts"], dtype=float) / result["settings"]["samples"]


def verdict(
    float32: list[dict], bfloat16: list[dict], base: list[dict], check: dict = CHECK
) -> dict[str, Any]:
    """Return the check's figures and verdict from the run records, seed by seed.

    ``float32``, ``bfloat16`` and ``base`` hold one record per seed of
    ``check["seeds"]``, in that order.
    """
    f32 = np.array([_pass1(r).mean(axis=0) for r in float32])  # seeds x T
    b16 = np.array([_pass1(r).mean(axis=0) for r in bfloat16])
    b0 = np.array([_pass1(r).mean(axis=0) for r in base])
    mean_drop = float(f32.mean() - b16.mean())
    gain_f32, gain_b16 = float((f32 - b0)[:, -1].mean()), float((b16 - b0)[:, -1].mean())
    kept = gain_b16 / gain_f32 if gain_f32 > 0 else float("nan")
    passed = mean_drop <= check["max_mean_drop"] and kept >= check["keep_gain"]
    budgets = float32[0]["result"]["settings"]["budgets"]
    return {
        "check": check,
        "budgets": budgets,
        "pass1": {"float32": f32.tolist(), "bfloat16": b16.tolist(), "base": b0.tolist()},
        "mean_drop": mean_drop,
        "gain_at_long_t": {"float32": gain_f32, "bfloat16": gain_b16, "kept": kept},
        "invalid": {
            "float32": [_invalid(r) for r in float32],
            "bfloat16": [_invalid(r) for r in bfloat16],
        },
        "process_cpu_seconds": {
            "float32": [r["seconds"]["process_cpu"] for r in float32],
            "bfloat16": [r["seconds"]["process_cpu"] for r in bfloat16],
        },
        "passed": bool(passed),
    }


def _invalid(record: dict[str, Any]) -> float | None:
    """The run's invalid-reply rate on the held-out evaluation."""
    value = (record["result"].get("diagnostics") or {}).get("invalid_action_rate")
    return None if value is None else float(value)


def lines(record: dict[str, Any]) -> list[str]:
    """The check's page, from its record."""
    check, gain = record["check"], record["gain_at_long_t"]
    seeds = ", ".join(map(str, check["seeds"]))
    table = ["| run | " + " | ".join(f"T={t}" for t in record["budgets"]) + " |"]
    table.append("|---" * (len(record["budgets"]) + 1) + "|")
    for name in ("float32", "bfloat16", "base"):
        for seed, row in zip(check["seeds"], record["pass1"][name], strict=True):
            label = f"{check['regime']} {name}" if name != "base" else "base (float32)"
            table.append(f"| {label}, seed {seed} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    cpu = record["process_cpu_seconds"]
    return [
        "# The bfloat16 learning check",
        "",
        f"The real-model study's `{check['regime']}` regime, training seeds {seeds}, rerun with "
        f"dtype {check['dtype']} (everything else as the v3 study launched it), against the "
        "committed float32 runs.  Held-out Pass@(1,T), 16 tasks x 8 samples per seed.",
        "",
        *table,
        "",
        "Declared before the runs (`studies/real_model/dtype_check.py`): bfloat16 passes if its "
        f"mean Pass@(1,T) over the grid and seeds is at most {check['max_mean_drop']:.2f} below "
        f"float32's, and its gain over the base at the long T keeps at least "
        f"{check['keep_gain']:.2f} of float32's.",
        "",
        f"- mean Pass@(1,T), float32 minus bfloat16: **{record['mean_drop']:+.3f}** "
        f"(limit {check['max_mean_drop']:.2f})",
        f"- gain over the base at the long T: float32 {gain['float32']:+.3f}, bfloat16 "
        f"{gain['bfloat16']:+.3f}: kept **{gain['kept']:.2f}** (at least {check['keep_gain']:.2f})",
        f"- process CPU seconds per run: float32 {', '.join(f'{s:.0f}' for s in cpu['float32'])}; "
        f"bfloat16 {', '.join(f'{s:.0f}' for s in cpu['bfloat16'])}",
        "",
        f"**Verdict: {'passed' if record['passed'] else 'failed'}.** "
        + (
            "bfloat16 learned within the declared tolerance: the next study may use it."
            if record["passed"]
            else "bfloat16 learned measurably less: the next study stays in float32."
        ),
        "",
        "Two seeds detect a large loss only; they cannot show that the two dtypes learn equally.",
        "",
    ]


def _jobs(out: Path, work: Path) -> list[Job]:
    """The check's runs: the study's own jobs for its regime and seeds, in bfloat16."""
    from studies.real_model.cli import build_parser, declare_jobs, settings

    s = {**settings(build_parser().parse_args([])), "dtype": CHECK["dtype"]}
    jobs = declare_jobs(s, out.resolve(), work.resolve())
    wanted = {(CHECK["regime"], seed) for seed in CHECK["seeds"]}
    return [job for job in jobs if (job.regime, job.seed) in wanted]


def main(argv: list[str] | None = None) -> int:
    """Run the check's runs (or resume them), then write its verdict; return the exit status."""
    from studies.real_model.jobs import run_job, setup_process

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--study", type=Path, default=Path("docs/real_model_study"))
    parser.add_argument("--work", type=Path, default=Path("runs/real_model_bf16"))
    args = parser.parse_args(argv)
    out = args.study / FOLDER
    setup_process("cpu", 1)
    log = lambda line: print(line, flush=True)  # noqa: E731
    done = run_jobs(_jobs(out, args.work), run_job, fresh_process=True, log=log)
    if len(done) < len(CHECK["seeds"]):
        return 0
    load = lambda regime, seed: json.loads(  # noqa: E731
        (args.study / "runs" / f"{regime}-seed{seed}" / "job.json").read_text()
    )
    record = verdict(
        [load(CHECK["regime"], seed) for seed in CHECK["seeds"]],
        sorted(done, key=lambda job: job["seed"]),
        [load("base", seed) for seed in CHECK["seeds"]],
    )
    record["load_average"] = kit.load_average()
    atomic_write_text(out / "check.json", json.dumps(kit.jsonable(record), indent=1) + "\n")
    atomic_write_text(out / "check.md", "\n".join(lines(record)))
    print("\n".join(lines(record)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
