"""The learning gate: does GRPO with LoRA learn at all here, and does the chosen depth keep it?

Before the study spends its CPU-hours, the long regime trains on
``GATES["seeds"]`` seeds twice, with LoRA on every layer and with LoRA on the
top ``LORA_LAYERS`` (the study's depth), and both are evaluated on the
held-out tasks beside the base model.  Per seed, the gain is held-out
Pass@(1, long T) minus the base model's (same evaluation seed).  The gate:

1. LoRA on every layer learns: its gain, averaged over the seeds, is at least
   ``GATES["min_gain"]`` (0.1).  If not, the declared steps, learning rate or
   tasks per step change, and the gate runs again, before anything else.
2. The chosen depth keeps at least ``GATES["keep_at_least"]`` (two thirds) of
   that gain.  If not, another depth or path is chosen, and its cost said.

The base and chosen-depth runs are the study's own ``base`` and ``long`` runs
of those seeds (same code, same settings), so they are not run twice; the
all-layer runs live apart, in ``gate/``.  When the chosen depth is every layer
(``LORA_LAYERS`` is ``None``), the study's long runs are the all-layer runs:
the gate adds no run, and condition 2 holds by definition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from studies import report as kit
from studies.real_model import design
from studies.runner import Job

__all__ = ["ALL_LAYERS", "gate_jobs", "gate_lines", "learning_gate"]

#: The gate's own regime: the long regime with LoRA on every layer.
ALL_LAYERS = "long-all-layers"


def gate_jobs(study: Sequence[Job], s: Mapping[str, Any], out: Path, work: Path) -> list[Job]:
    """The gate's jobs: the study's base and long runs of its seeds, then the all-layer runs."""
    seeds = range(min(design.GATES["seeds"], s["seeds"]))
    shared = [job for job in study if job.regime in ("base", "long") and job.seed in seeds]
    if design.LORA_LAYERS is None:  # the study's long runs adapt every layer already
        return sorted(shared, key=lambda job: (job.regime != "base", job.seed))
    long_ = {job.seed: job for job in shared if job.regime == "long"}
    every_layer = [
        Job(
            ALL_LAYERS,
            seed,
            str(out / "gate" / f"{ALL_LAYERS}-seed{seed}"),
            {**long_[seed].settings, "lora_layers": None, "run": str(work / f"gate-seed{seed}")},
        )
        for seed in seeds
    ]
    # The bases first (cheap), then each seed's two depths side by side.
    return sorted(
        [*shared, *every_layer],
        key=lambda job: (job.regime != "base", job.seed, job.regime == ALL_LAYERS),
    )


def _gain(trained: Any, base: Any) -> float:
    """Held-out Pass@(1, long T) of ``trained`` minus the base model's."""
    return float((design.pass1(trained) - design.pass1(base))[:, -1].mean())


def learning_gate(runs: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """Return the gate's figures and verdict from the ``base``, ``long`` and all-layer results."""
    all_layers = runs["long"] if design.LORA_LAYERS is None else runs[ALL_LAYERS]
    seeds = range(len(all_layers))
    every = [_gain(all_layers[k], runs["base"][k]) for k in seeds]
    chosen = [_gain(runs["long"][k], runs["base"][k]) for k in seeds]
    every_mean, chosen_mean = float(np.mean(every)), float(np.mean(chosen))
    learns = every_mean >= design.GATES["min_gain"]
    kept = chosen_mean / every_mean if every_mean > 0 else None
    keeps = kept is not None and kept >= design.GATES["keep_at_least"]
    return {
        "seeds": len(seeds),
        "long_t": design.LONG,
        "gain_every_layer": every,
        "gain_chosen_depth": chosen,
        "mean_gain_every_layer": every_mean,
        "mean_gain_chosen_depth": chosen_mean,
        "kept": kept,
        "lora_layers": design.LORA_LAYERS,
        "learns": learns,
        "keeps": keeps,
        "passed": learns and keeps,
    }


def gate_lines(record: Mapping[str, Any], cpu: Mapping[str, float]) -> list[str]:
    """The gate's record as markdown: per-seed gains, the two conditions, the verdict."""
    t, layers = record["long_t"], record["lora_layers"]
    depth = "every layer (the study's depth)" if layers is None else f"the top {layers} layers"
    rows = [
        (seed, f"{every:+.3f}", f"{chosen:+.3f}")
        for seed, (every, chosen) in enumerate(
            zip(record["gain_every_layer"], record["gain_chosen_depth"], strict=True)
        )
    ]
    rows.append(
        (
            "mean",
            f"{record['mean_gain_every_layer']:+.3f}",
            f"{record['mean_gain_chosen_depth']:+.3f}",
        )
    )
    kept = "undefined" if record["kept"] is None else f"{record['kept']:.2f}"
    return [
        "# The learning gate (long regime, held-out tasks)",
        "",
        f"Gain in Pass@(1,{t}) over the base model, per training seed:",
        "",
        *kit.table(["seed", "LoRA on every layer", f"LoRA on {depth}"], rows),
        "",
        f"1. Every layer learns (mean gain >= {design.GATES['min_gain']}): "
        f"{'yes' if record['learns'] else 'NO'}.",
        f"2. LoRA on {depth} keeps >= {design.GATES['keep_at_least']:.2f} of it: "
        f"{kept} ({'yes' if record['keeps'] else 'NO'}).",
        "",
        f"Gate {'PASSED' if record['passed'] else 'FAILED'}.",
        "",
        "CPU seconds per run (process time): "
        + ", ".join(f"{name} {seconds:.0f}" for name, seconds in cpu.items()),
        "",
    ]
