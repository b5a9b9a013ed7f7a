"""A study's jobs on Ray: the sequential runner's records, durable, one task per job.

One local Ray instance (2 CPUs) serves the whole module; it is started from a
folder outside the checkout, so that nothing but the runner's ``PYTHONPATH``
points its workers at this checkout.  Every test skips, with the reason,
when the ``[ray]`` extra is not installed.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import time
from pathlib import Path

import pytest

from studies.runner import RECORD, Job, run_jobs

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="the [ray] extra is not installed (pip install -e '.[ray]')",
)

ROOT = Path(__file__).resolve().parents[1]
#: Long enough for any machine; the tests never depend on it, it only ends a hang.
HANG = 300


@pytest.fixture(scope="module", autouse=True)
def ray_instance(tmp_path_factory):
    """One local Ray instance of 2 CPUs for the module; run_jobs reuses it and leaves it up."""
    import ray

    # The job functions live in this module, which Ray workers cannot import: ship them by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    started = not ray.is_initialized()
    if started:
        here = os.getcwd()
        os.chdir(tmp_path_factory.mktemp("ray"))  # Ray puts its start folder on workers' path
        try:
            ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
        finally:
            os.chdir(here)
    yield ray
    if started:
        ray.shutdown()


def _wait_for(paths: list[Path]) -> None:
    deadline = time.monotonic() + HANG
    while not all(path.exists() for path in paths):
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {HANG} s for {paths}")
        time.sleep(0.05)


def synthetic_job(job: Job) -> dict:
    """A deterministic job: a phase-1 job reads what its phase-0 job wrote in its folder.

    Paths are relative, as a study's are: they resolve in the driver's working
    directory.  Every call is logged in ``calls.log``.  ``settings["fail"]``:
    while the file ``fail`` exists, wait for the records of those jobs, then fail.
    """
    with open("calls.log", "a") as log:
        log.write(f"{job.regime} {job.seed}\n")
    if "fail" in job.settings and Path("fail").exists():
        _wait_for([Path(folder) / RECORD for folder in job.settings["fail"]])
        raise RuntimeError("out of memory")
    if "hang" in job.settings:
        Path("hang.pid").write_text(str(os.getpid()))
        _wait_for([Path("never")])
    folder = Path(job.folder)
    folder.mkdir(parents=True, exist_ok=True)
    if job.phase == 0:
        value = 7 * job.seed + 3
    else:
        value = 10 * int((Path(job.settings["warm"]) / "value.txt").read_text()) + job.seed
    (folder / "value.txt").write_text(str(value))
    return {"value": value, "settings": dict(job.settings)}


def where_it_ran(job: Job) -> dict:
    """Where the job ran: its process, the CPUs Ray gave it, the code and folder it used."""
    import ray

    import studies.runner

    return {
        "pid": os.getpid(),
        "cpus": ray.get_runtime_context().get_assigned_resources().get("CPU"),
        "runner": studies.runner.__file__,
        "cwd": os.getcwd(),
    }


def _study() -> list[Job]:
    warm = [Job("warm", seed, f"runs/warm-{seed}", {"threads": 1}) for seed in range(3)]
    long_ = [
        Job("long", seed, f"runs/long-{seed}", {"warm": f"runs/warm-{seed}"}, phase=1)
        for seed in range(3)
    ]
    return long_ + warm  # phases run in order whatever the order given


def _records(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != "calls.log"
    }


def test_a_study_on_ray_writes_the_same_records_as_the_sequential_runner(tmp_path, monkeypatch):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    local.mkdir(), on_ray.mkdir()
    monkeypatch.chdir(local)
    expected = run_jobs(_study(), synthetic_job, log=lambda line: None)
    monkeypatch.chdir(on_ray)
    lines: list[str] = []
    summaries = run_jobs(_study(), synthetic_job, log=lines.append, backend="ray")
    # The same job.json and job files, byte for byte, and the same summaries in job order.
    assert _records(on_ray) == _records(local) and len(_records(local)) == 12
    assert summaries == expected
    assert [s["value"] for s in summaries] == [30, 101, 172, 3, 10, 17]
    # Every job ran once, phase 0 before phase 1.
    calls = (on_ray / "calls.log").read_text().splitlines()
    assert sorted(calls[:3]) == ["warm 0", "warm 1", "warm 2"]
    assert sorted(calls[3:]) == ["long 0", "long 1", "long 2"]
    assert lines[0] == "phase 0: 3 job(s) to run, 0 finished before"
    # A rerun finds every job finished: nothing runs and the records stay as they are.
    before = _records(on_ray)
    again = run_jobs(_study(), synthetic_job, log=lambda line: None, backend="ray")
    assert all(s["reused"] for s in again) and _records(on_ray) == before
    assert len((on_ray / "calls.log").read_text().splitlines()) == 6


def test_each_job_is_a_task_of_its_threads_in_the_drivers_folder_and_checkout(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    jobs = [
        Job("two", 0, "two-0", {"threads": 2}),
        Job("two", 1, "two-1", {"threads": 2}),
        Job("one", 0, "one-0"),
    ]
    ran = run_jobs(jobs, where_it_ran, log=lambda line: None, fresh_process=True, backend="ray")
    assert [s["cpus"] for s in ran] == [2.0, 2.0, 1.0]
    # fresh_process: a worker process of its own for each job, never the driver.
    assert len({s["pid"] for s in ran} | {os.getpid()}) == 4
    assert {s["runner"] for s in ran} == {str(ROOT / "studies" / "runner.py")}
    assert {s["cwd"] for s in ran} == {str(tmp_path)}


def test_a_job_failing_on_ray_keeps_the_records_before_it_and_the_rerun_runs_only_it(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    jobs = [
        Job("warm", 0, "warm-0", {"fail": ["warm-1", "warm-2"]}),
        Job("warm", 1, "warm-1"),
        Job("warm", 2, "warm-2"),
    ]
    Path("fail").touch()
    with pytest.raises(RuntimeError, match="out of memory"):
        run_jobs(jobs, synthetic_job, log=lambda line: None, backend="ray")
    # The jobs that finished while the failing one ran were written as they finished.
    records = {path.parent.name: path.read_bytes() for path in tmp_path.glob(f"*/{RECORD}")}
    assert sorted(records) == ["warm-1", "warm-2"]
    Path("fail").unlink()
    calls = len((tmp_path / "calls.log").read_text().splitlines())
    summaries = run_jobs(jobs, synthetic_job, log=lambda line: None, backend="ray")
    assert (tmp_path / "calls.log").read_text().splitlines()[calls:] == ["warm 0"]
    assert [s["reused"] for s in summaries] == [False, True, True]
    assert {name: (tmp_path / name / RECORD).read_bytes() for name in records} == records


def test_a_stopped_driver_cancels_the_tasks_still_running(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    jobs = [Job("hang", 0, "hang-0", {"hang": True}), Job("warm", 1, "warm-1")]

    def stop_after_one(line: str) -> None:
        if "done" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_jobs(jobs, synthetic_job, log=stop_after_one, backend="ray")
    assert (tmp_path / "warm-1" / RECORD).exists() and not (tmp_path / "hang-0").exists()
    _wait_for([tmp_path / "hang.pid"])
    pid = int((tmp_path / "hang.pid").read_text())
    deadline = time.monotonic() + HANG
    while _alive(pid):  # force-cancelled: Ray kills the worker that ran it
        assert time.monotonic() < deadline, "the cancelled task's worker is still running"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_job_larger_than_every_node_is_refused_before_any_job_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    jobs = [Job("warm", 0, "warm-0"), Job("long", 0, "long-0", {"threads": 3}, phase=1)]
    with pytest.raises(ValueError, match="runs 3 threads, but the largest Ray node has 2 CPUs"):
        run_jobs(jobs, synthetic_job, log=lambda line: None, backend="ray")
    assert not (tmp_path / "calls.log").exists()


def test_an_address_is_refused_without_the_ray_backend(tmp_path):
    with pytest.raises(ValueError, match="for backend='ray' only"):
        run_jobs([Job("warm", 0, str(tmp_path / "w"))], synthetic_job, address="auto")
    with pytest.raises(ValueError, match="backend must be one of local, ray"):
        run_jobs([Job("warm", 0, str(tmp_path / "w"))], synthetic_job, backend="dask")
