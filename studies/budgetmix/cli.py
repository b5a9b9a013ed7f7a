"""The BudgetMix study, v3: does the training budget regime shape the Pass@(1,T) surface?

``python -m studies.budgetmix``: choose the held-out tasks, run the jobs, write the report.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.files import atomic_write_text
from agent_envs.statistics.seed_tests import holm
from studies.budgetmix import report
from studies.budgetmix.design import (
    HELD_OUT,
    ORACLE_SAMPLES,
    PLANS,
    QUICK,
    SAMPLES,
    SEEDS,
    WORKERS,
    held_out_tasks,
)
from studies.budgetmix.jobs import declare_jobs, run_job
from studies.report import table
from studies.runner import add_backend_arguments, backend_of, run_jobs


def build_parser() -> argparse.ArgumentParser:
    """Return the study's command-line parser."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny plumbing check for CI")
    parser.add_argument("--envs", nargs="+", default=list(PLANS), choices=list(PLANS))
    parser.add_argument("--seeds", type=int, default=SEEDS, help="number of seeds")
    parser.add_argument("--timesteps", type=int, help="PPO steps per regime (default: the plan's)")
    parser.add_argument("--workers", type=int, default=WORKERS, help="parallel runs")
    add_backend_arguments(parser)
    parser.add_argument("--out", type=Path, default=Path("docs/budgetmix"))
    parser.add_argument("--work", type=Path, default=Path("runs/budgetmix"))
    parser.add_argument("--no-plots", action="store_true", help="skip the difference plots")
    parser.add_argument(
        "--holm-only",
        action="store_true",
        help="write holm.md: Holm over the p-values of the committed results.json in --out",
    )
    return parser


def sizes_of(args: argparse.Namespace) -> dict[str, Any]:
    """Return the run sizes: seeds, held-out tasks, samples, and per env (demos, PPO steps)."""
    if args.quick:
        return {
            **QUICK,
            "sizes": {e: (QUICK["bc_episodes"], QUICK["timesteps"]) for e in args.envs},
        }
    return {
        "seeds": args.seeds,
        "held_out": HELD_OUT,
        "samples": SAMPLES,
        "oracle_samples": ORACLE_SAMPLES,
        "sizes": {
            e: (PLANS[e].bc_episodes, args.timesteps or PLANS[e].timesteps) for e in args.envs
        },
    }


def write_holm(out: Path) -> None:
    """Write ``holm.md``: Holm within each env's families, from a committed results.json.

    The v2 study kept per-seed means and seed-level p-values but no per-task
    counts, so its intervals cannot be recomputed; its p-values can be
    corrected, without re-running anything.
    """
    data = json.loads((out / "results.json").read_text())
    lines = ["# Holm correction of the committed v2 results (no re-run)", ""]
    for env_id, record in data.items():  # one section per env
        pairs = sorted({tuple(sorted(key.split(" vs "))) for key in record["p_values"]})
        raw = np.array([record["p_values"][f"{a} vs {b}"] for a, b in pairs])
        lines += [
            f"## {env_id}",
            "",
            f"Primary family ({len(pairs)} pairwise tests):",
            "",
            *table(
                ["pair", "p", "Holm p"],
                [
                    (f"{a} vs {b}", f"{p:.3f}", f"{q:.3f}")
                    for (a, b), p, q in zip(pairs, raw, holm(raw), strict=True)
                ],
            ),
        ]
        cells = [
            (name, t, c["p_value"][0][j], c["diff"][0][j], c["ci_low"][0][j], c["ci_high"][0][j])
            for name, c in record["compare_with_warm"].items()
            for j, t in enumerate(c["budgets"])
        ]
        adjusted = holm(np.array([cell[2] for cell in cells]))
        lines += [
            "",
            f"Secondary family (every Pass@(1,T) cell of regime - warm, {len(cells)} tests):",
            "",
            *table(
                ["regime - warm", "T", "difference [95% interval]", "p", "Holm p"],
                [
                    (
                        name,
                        t,
                        f"{d:+.3f} [{low:+.3f}, {high:+.3f}]",
                        f"{p:.4f}",
                        f"{q:.3f}{' (significant)' if q <= 0.05 else ''}",
                    )
                    for (name, t, p, d, low, high), q in zip(cells, adjusted, strict=True)
                ],
            ),
            "",
        ]
    atomic_write_text(out / "holm.md", "\n".join(lines) + "\n")
    print(f"wrote {out / 'holm.md'}")


def main(argv: list[str] | None = None) -> int:
    """Run the study; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.holm_only:
        write_holm(args.out)
        return 0
    if min(args.seeds, args.timesteps or 1, args.workers) < 1:
        parser.error("--seeds, --timesteps and --workers must be >= 1")
    size = sizes_of(args)
    started, load_before = time.perf_counter(), os.getloadavg()
    chosen = {
        env_id: held_out_tasks(env_id, size["held_out"], PLANS[env_id]) for env_id in args.envs
    }
    jobs = declare_jobs(chosen, size["seeds"], size["samples"], size["sizes"], args.work)
    print(f"{len(jobs)} runs on {args.workers} worker(s); load average {load_before}", flush=True)
    log = lambda line: print(line, flush=True)  # noqa: E731
    summaries = run_jobs(jobs, run_job, args.workers, log, **backend_of(args))
    command = "python -m studies.budgetmix " + " ".join(argv or sys.argv[1:])
    report.write(
        args, chosen, summaries, size, {"command": command, "started": started, "load": load_before}
    )
    return 0
