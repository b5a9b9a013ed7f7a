"""The v4 study keeps every run's transcripts, and they say what its record says.

So that a new diagnostic needs no retraining, each committed run keeps its
evaluation's run log, gzipped, beside its ``job.json``.  The tests below read
every committed run's log back and recompute from it alone what the run's
record holds: its settings, one episode per held-out task and sample, the
success counts at every T of the grid (the hidden budget: one episode at the
largest T answers every smaller one) and the move shares.  They also hold the
study's folder under the 40 MB the issue allows, with room for every run the
design still owes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from studies.real_model.moves import move_mix
from studies.real_model_v4 import design as d

V4 = Path(__file__).resolve().parents[1] / "docs" / "real_model_study" / "v4"
RUNS = sorted(path.parent for path in V4.glob("runs/*/job.json"))
LIMIT_BYTES = 40 * 1000 * 1000


def _log(folder: Path) -> tuple[dict, list[dict]]:
    """Return a run's run-log header and its episode lines."""
    with gzip.open(folder / "episodes.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    assert records[0].get("type") == "header", folder.name
    return records[0], records[1:]


def test_runs_have_landed():
    # The tests below read each committed run; none would run on an empty list.
    assert len(RUNS) >= 1


@pytest.mark.parametrize("folder", RUNS, ids=lambda folder: folder.name)
def test_a_run_s_transcripts_recompute_its_record(folder):
    job = json.loads((folder / "job.json").read_text(encoding="utf-8"))
    header, episodes = _log(folder)
    settings = job["result"]["settings"]
    assert header["settings"] == settings
    assert {e["run"] for e in episodes} == {header["run"]}
    # One episode per held-out task and sample, none lost to an error.
    tasks, samples = settings["tasks"], settings["samples"]
    assert sorted((e["task"], e["sample"]) for e in episodes) == sorted(
        (task, sample) for task in tasks for sample in range(samples)
    )
    assert all(e["error"] is None for e in episodes)
    assert all(len(e["transcript"]["steps"]) == e["turns"] for e in episodes)
    # Success within T: a success whose first success came by turn T.
    counts = np.zeros((len(tasks), len(settings["budgets"])), dtype=int)
    for e in episodes:
        if e["success"]:
            row = tasks.index(e["task"])
            counts[row] += [e["first_success_turn"] <= t for t in settings["budgets"]]
    assert counts.tolist() == job["result"]["success_counts"]
    assert move_mix(e["transcript"] for e in episodes) == pytest.approx(job["moves"])


def test_the_study_folder_stays_under_40_mb_with_room_for_every_run_to_come():
    sizes = {path: path.stat().st_size for path in V4.rglob("*") if path.is_file()}
    total = sum(sizes.values())
    per_run = [sum(s for p, s in sizes.items() if folder in p.parents) for folder in RUNS]
    to_come = d.SEEDS * len(d.REGIMES) - len(RUNS)
    assert total + to_come * 2 * max(per_run) < LIMIT_BYTES, (total, max(per_run))
