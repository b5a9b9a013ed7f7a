"""The v4 study's report (``python -m studies.real_model_v4 --report``).

On 48 synthetic runs, built from a committed ``job.json`` with known success
counts, step-quality rates, move shares and CPU seconds, the report gives the
figures and verdict words worked out by hand below, twice byte for byte; it
refuses a run of another design or commit and writes nothing then.  On the
committed runs, until all 48 have landed, it lists exactly the landed runs
and gives no verdict; once they have, the committed results are what it writes.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from agent_envs.evaluation import EvalResult
from studies.preregistration import PreregistrationError, design_hash
from studies.real_model_v4 import cli
from studies.real_model_v4 import design as d
from studies.real_model_v4 import report as r

V4 = Path(__file__).resolve().parents[1] / "docs" / "real_model_study" / "v4"
TEMPLATE = V4 / "runs" / "base-seed0" / "job.json"
VERDICT_WORDS = ("supported", "contradicted", "higher", "lower", "no difference shown")

#: Successes out of 8 at T = 3, 5, 7, 10, 14, 20, the same on every held-out task.
COUNTS = {
    "base": [0, 0, 1, 1, 2, 2],
    "short": [1, 1, 2, 2, 2, 2],
    "long": [1, 1, 2, 3, 4, 6],  # odd seeds: 5 at T=20
    "mix": [1, 1, 2, 3, 4, 6],
    "long-pr": [1, 1, 2, 3, 4, 6],  # long's, seed by seed
    "validity": [0, 0, 1, 1, 2, 2],
}


@pytest.fixture(autouse=True)
def _cpu_only(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # what cli.main sets; undone after


def _counts(regime: str, seed: int) -> list[int]:
    row = list(COUNTS[regime])
    if regime in ("long", "long-pr") and seed % 2:
        row[-1] = 5
    return row


def _job(template: dict, regime: str, seed: int) -> dict:
    """A synthetic run: the template's record with this design's known numbers."""
    job = copy.deepcopy(template)
    job.update(regime=regime, seed=seed, folder=f"runs/{regime}-seed{seed}")
    result = job["result"]
    counts = np.array([_counts(regime, seed)] * len(result["settings"]["tasks"]))
    result["success_counts"] = counts.tolist()
    surface = EvalResult.per_task(8, counts, result["settings"]["ks"]).mean(axis=0)
    result["surface"] = result["ci_low"] = result["ci_high"] = surface.tolist()
    quality = result["diagnostics"]["step_quality"]
    quality["on_path_optimal_rate"] = 0.5
    # claim 2: long's off-path gain over validity is +0.125 on even seeds, -0.125 on odd.
    quality["recovery_optimal_rate"] = {"long": 0.5 if seed % 2 == 0 else 0.25}.get(regime, 0.375)
    job["moves"]["bisect"] = {"long-pr": 0.3, "long": 0.1}.get(regime, 0.0)
    job["seconds"] = {
        "train": 0.0,
        "eval": 1.0,
        "process_cpu": 100.0 if regime == "base" else 1000.0,
    }
    return job


def _study(folder: Path, skip: tuple[str, ...] = ()) -> Path:
    """A v4 folder with the committed launch, gates and forecast, and synthetic runs."""
    for name in ("launch.json", "calibration.json", r.FORECAST):
        shutil.copy(V4 / name, folder / name)
    template = json.loads(TEMPLATE.read_text())
    for regime in d.REGIMES:
        for seed in range(d.SEEDS):
            if f"{regime}-seed{seed}" in skip:
                continue
            run = folder / "runs" / f"{regime}-seed{seed}"
            run.mkdir(parents=True)
            (run / "job.json").write_text(json.dumps(_job(template, regime, seed), indent=1))
    # long - base at T=20, seeds 0 and 1: 6/8 - 2/8 and 5/8 - 2/8; as write_once writes it.
    gate = {"gain": 0.4375, "gains": [0.5, 0.375], "passed": True}
    (folder / "learning_gate.json").write_text(json.dumps(gate, indent=1, sort_keys=True) + "\n")
    return folder


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The report of the synthetic study, written twice: (folder, first texts, second texts)."""
    folder = _study(tmp_path_factory.mktemp("v4"))
    texts = []
    for _ in range(2):
        assert r.report(folder) == 0
        texts.append({n: (folder / n).read_bytes() for n in ("results.md", "results.json")})
    return folder, texts[0], texts[1]


def test_the_primary_tests_are_the_hand_computed_ones(written):
    folder, _, _ = written
    primary = json.loads((folder / "results.json").read_text())["primary"]
    cells = list(primary.values())
    # claim 1: share(20) - share(5); base 0 at T=5, 1/4 at T=20; oracle 7/16 and 1.
    # Long 1/8 at T=5 (share 2/7), 3/4 or 5/8 at T=20 (share 2/3 or 1/2).
    assert cells[0]["per_seed"] == pytest.approx([8 / 21, 3 / 14] * 4)
    assert cells[0]["estimate"] == pytest.approx(25 / 84)
    # claim 2: +-1/8 alternately, mean 0; claim 3: mix ties the better of short and long at
    # every T (odd seeds beat long at T=20 by 1/8), so the estimate is the margin.
    assert cells[1]["per_seed"] == pytest.approx([0.125, -0.125] * 4)
    assert cells[2]["estimate"] == pytest.approx(d.MARGIN)
    assert np.array(cells[2]["per_seed"])[:, -1] == pytest.approx([0.075, 0.2] * 4)
    # the process tests: bisecting +0.2 every seed; Pass@(1,T) the same as long's.
    assert cells[3]["per_seed"] == pytest.approx([0.2] * 8)
    assert cells[4]["per_seed"] == [0.0] * 8
    # Exact sign-flip p over 8 seeds (2 of 256 patterns two-sided, 1 of 256 one-sided), Holm.
    assert [c["p"] for c in cells] == [2 / 256, 1.0, 1 / 256, 2 / 256, 1.0]
    assert [c["holm_p"] for c in cells] == [8 / 256, 1.0, 5 / 256, 8 / 256, 1.0]
    verdicts = ["supported", "not supported", "supported", "higher", "no difference shown"]
    assert [c["verdict"] for c in cells] == verdicts
    page = (folder / "results.md").read_text()
    for name, cell in primary.items():
        assert f"| {name} | {cell['estimate']:+.4f} |" in page
        assert f"{cell['holm_p']:.4f} | **{cell['verdict']}** |" in page


def test_the_oracle_secondary_figures_cost_and_gates(written):
    folder, _, _ = written
    record = json.loads((folder / "results.json").read_text())
    # The oracle bisects: 3 held-out tasks need 2 guesses, 4 need 5, 8 need 6 and 1 needs 7.
    ones = {str(t): 1.0 for t in (7, 10, 14, 20)}
    assert record["oracle"]["pass1"] == {"3": 3 / 16, "5": 7 / 16, **ones}
    surfaces = record["secondary"]["surfaces"]
    # With 8 samples a task, K=8 takes them all: 1 wherever a task has a success.
    assert surfaces["base"]["mean"][3] == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert surfaces["base"]["mean"][0] == pytest.approx([0, 0, 1 / 8, 1 / 8, 1 / 4, 1 / 4])
    assert surfaces["base"]["low"][0] == surfaces["base"]["mean"][0]  # every seed, task alike
    moves = record["secondary"]["moves"]
    assert moves["long-pr"]["bisect"] == pytest.approx({"mean": 0.3, "low": 0.3, "high": 0.3})
    off_path = record["secondary"]["recovery_and_step_quality"]["differences"]
    assert off_path["long - validity"]["off path"][0] == pytest.approx(0.0)
    assert off_path["long - base"]["on path"][0] == 0.0
    assert record["cost"]["cpu_hours"] == pytest.approx((8 * 100 + 40 * 1000) / 3600)
    assert record["cost"]["regimes"]["base"]["cpu_seconds_per_run"] == 100.0
    assert record["gates"]["learning_recomputed_same"] is True
    assert record["gates"]["calibration"] == json.loads((V4 / "calibration.json").read_text())
    page = (folder / "results.md").read_text()
    for title in d.SECONDARY:
        assert f"### Secondary: {title}" in page
    assert (
        "In all 11.33 CPU-hours" in page and "recomputed from the committed runs: the same" in page
    )


def test_the_report_is_byte_identical_twice(written):
    _, first, second = written
    assert first == second


def test_a_result_stored_as_a_json_string_reads_the_same(written, tmp_path):
    _, first, _ = written
    _study(tmp_path)
    job = tmp_path / "runs" / "mix-seed3" / "job.json"
    record = json.loads(job.read_text())
    record["result"] = json.dumps(record["result"])
    job.write_text(json.dumps(record))
    r.report(tmp_path)
    assert (tmp_path / "results.md").read_bytes() == first["results.md"]


@pytest.mark.parametrize(("key", "what"), [("design_sha256", "design"), ("commit", "commit")])
def test_a_run_of_another_design_or_commit_is_refused_and_nothing_written(tmp_path, key, what):
    _study(tmp_path)
    (tmp_path / "results.md").write_text("before\n")
    job = tmp_path / "runs" / "validity-seed5" / "job.json"
    record = json.loads(job.read_text())
    record[key] = "f" * len(record[key])
    job.write_text(json.dumps(record))
    with pytest.raises(PreregistrationError, match=f"validity-seed5.*its {what} \\(ffff"):
        r.report(tmp_path)
    assert cli.main(["--report", "--out", str(tmp_path)]) == 2
    assert (tmp_path / "results.md").read_text() == "before\n"
    assert not (tmp_path / "results.json").exists()


@pytest.mark.parametrize("folder", ["base-seed8", "base-seed01", "walk-seed0"])
def test_a_folder_that_is_no_run_of_the_design_is_refused(tmp_path, folder):
    _study(tmp_path)
    shutil.copytree(tmp_path / "runs" / "base-seed0", tmp_path / "runs" / folder)
    with pytest.raises(PreregistrationError, match=f"{folder}: not a run of the design"):
        r.load_runs(tmp_path)


def test_a_run_evaluated_on_other_tasks_is_refused(tmp_path):
    _study(tmp_path)
    job = tmp_path / "runs" / "long-seed6" / "job.json"
    record = json.loads(job.read_text())
    record["result"]["settings"]["tasks"][0] = 99_999
    job.write_text(json.dumps(record))
    with pytest.raises(PreregistrationError, match="long-seed6 differs from the others in tasks"):
        r.load_runs(tmp_path)


def test_a_run_with_other_oracle_turns_than_the_oracle_plays_now_is_refused(tmp_path):
    """The oracle is measured now: a run whose env put the tasks at other horizons is refused."""
    _study(tmp_path)
    job = tmp_path / "runs" / "short-seed4" / "job.json"
    record = json.loads(job.read_text())
    horizons = record["result"]["diagnostics"]["by_horizon"]
    horizons["4"] = horizons.pop("2")  # 3 tasks 4 guesses from the secret instead of 2
    job.write_text(json.dumps(record))
    with pytest.raises(PreregistrationError, match="short-seed4 recorded other oracle turns"):
        r.report(tmp_path)
    assert not (tmp_path / "results.md").exists()


def test_with_runs_missing_the_report_gives_progress_and_no_verdict(tmp_path, capsys):
    _study(tmp_path, skip=("validity-seed7", "mix-seed2"))
    assert cli.main(["--report", "--out", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "46 of 48 runs landed" in shown
    assert "| mix | 0, 1, 3, 4, 5, 6, 7 | 2 |" in shown
    assert "| validity | 0, 1, 2, 3, 4, 5, 6 | 7 |" in shown
    # 8 base runs of 100 CPU-s, 38 others of 1000; the forecast per run, run by run.
    per_run = json.loads((V4 / r.FORECAST).read_text())["estimate"]["cpu_per_run"]
    forecast = 8 * sum(per_run.values()) - per_run["mix"] - per_run["validity"]
    assert f"CPU-hours spent: {(800 + 38_000) / 3600:.2f} " in shown
    assert f"the forecast for these runs {forecast / 3600:.2f}, for the whole study 15.76" in shown
    assert not any(word in shown for word in VERDICT_WORDS)
    assert not (tmp_path / "results.md").exists() and not (tmp_path / "results.json").exists()
    _, runs = r.load_runs(tmp_path)
    with pytest.raises(PreregistrationError, match="2 runs have not landed"):
        r.analyse(tmp_path, {}, runs)


def _committed() -> list[str]:
    return sorted(path.parent.name for path in (V4 / "runs").glob("*/job.json"))


def test_the_committed_runs_are_the_launched_design():
    launch = json.loads((V4 / "launch.json").read_text())
    assert design_hash(d.design()) == launch["design_sha256"]
    _, runs = r.load_runs(V4)  # refuses a run of another design or commit
    assert sorted(f"{n}-seed{s}" for n, seeds in runs.items() for s in seeds) == _committed()


def test_the_committed_runs_give_their_progress_or_the_committed_results(capsys):
    """Until all 48 runs have landed: the progress of exactly those, no verdict, nothing
    written.  Then: the committed results are what the report writes."""
    launch, runs = r.load_runs(V4)
    if len(_committed()) == len(d.REGIMES) * d.SEEDS:
        lines, record = r.analyse(V4, launch, runs)
        assert (V4 / "results.md").read_text() == "\n".join(lines) + "\n"
        written = json.dumps(r.kit.jsonable(record), indent=1) + "\n"
        assert (V4 / "results.json").read_text() == written
        return
    before = {path: path.read_bytes() for path in V4.glob("results.*")}
    assert cli.main(["--report", "--out", str(V4)]) == 0
    shown = capsys.readouterr().out
    assert f"{len(_committed())} of 48 runs landed" in shown
    _, record = r.progress(runs, V4)
    assert sorted(record["landed"]) == _committed()
    every = {f"{n}-seed{s}" for n in d.REGIMES for s in range(d.SEEDS)}
    assert set(record["missing"]) == every - set(_committed())
    for name, seeds in runs.items():
        landed = ", ".join(str(seed) for seed in sorted(seeds)) or "none"
        assert f"| {name} | {landed} |" in shown
    assert not any(word in shown for word in VERDICT_WORDS)
    assert {path: path.read_bytes() for path in V4.glob("results.*")} == before
