"""One durable runner for a study's (regime x seed) jobs.

A study declares its jobs (:class:`Job`: a regime, a seed, a folder and the
settings the job needs) and hands :func:`run_jobs` the function that does one
job.  The runner never imports a study, so no circle closes.

Durable: when a job's function returns, its summary is written atomically to
``<job folder>/job.json`` (:func:`agent_envs.files.atomic_write_text`), and a
job whose ``job.json`` exists is skipped on the next run.  A study killed
mid-run, or one that outlives a sitting, continues where it stopped: it
redoes only the job that was in progress.  A job's own files (a model, an
evaluation) may be left half-written by a kill; the job function starts its
folder afresh, because without ``job.json`` the job never finished.

Phases: jobs run in the order of their ``phase`` (a fine-tune after the warm
start it starts from), and within a phase in the order given.

Where: here, in spawned processes (``workers``), or as Ray tasks on a local
Ray or a cluster (``backend="ray"``).  Each backend writes the same
``job.json``.  On Ray:

* **One task per job**, reserving ``settings["threads"]`` CPUs (1 if unset),
  so Ray runs as many side by side as the cluster's CPUs hold.  With
  ``fresh_process`` each task gets a worker process of its own, which exits
  after it (a model's memory goes back), as the local backend does.
* **The driver is the only writer of** ``job.json``.  A task returns the job's
  result; the driver writes each record as its task finishes, in the order
  they finish (``ray.wait``), so a study stopped at any point keeps every
  finished job and a rerun runs only the rest.  A stopped driver cancels the
  tasks still running: their jobs have no record, so the rerun runs them.
* **The driver's checkout is the code.**  Each task's ``PYTHONPATH`` starts
  with the root of the checkout this module was imported from (a pinned
  worktree, when :mod:`studies.real_model.pinned` launched the study), and
  each task runs in the driver's working directory, where the jobs' relative
  folders point.  A task returns the commit its code was read from
  (:func:`code_commit`) and the driver refuses a result of any other commit
  than its own.  On a cluster every node therefore needs the checkout at the
  same path, the same virtual environment, and the study's folders on a file
  system they share (``docs/distributed.md``).

Ray is imported only when a study runs on it, through the evaluator's Ray
backend (the same install hint, and the same rules for starting or joining
a Ray instance).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

from agent_envs.files import atomic_write_text
from studies.report import jsonable

__all__ = [
    "BACKENDS",
    "RECORD",
    "Job",
    "add_backend_arguments",
    "backend_of",
    "code_commit",
    "finished",
    "run_jobs",
]

#: The file, in a job's folder, that says the job finished and holds its summary.
RECORD = "job.json"
#: Where jobs can run: this machine's processes, or Ray tasks.
BACKENDS = ("local", "ray")
#: The root of the checkout the driver runs: every Ray task imports from it.
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Job:
    """One (regime, seed) job of a study: what its job function needs to run it."""

    regime: str
    seed: int
    #: Where the job writes; ``folder/job.json`` marks it finished.
    folder: str
    #: Whatever the study's job function reads (JSON-able values).
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: Phases run in increasing order; a job may read an earlier phase's output.
    phase: int = 0

    @property
    def record(self) -> Path:
        """The path of this job's ``job.json``."""
        return Path(self.folder) / RECORD


def finished(job: Job) -> dict[str, Any] | None:
    """Return the summary a finished job wrote, or ``None`` if it has not finished."""
    try:
        return json.loads(job.record.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def code_commit() -> str:
    """Return the git commit of the code running now, ``+dirty`` if its tracked files changed.

    It is read from the checkout this module lives in, so a study run from a
    pinned worktree records that worktree's commit; ``"unknown"`` outside git.
    """
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}+dirty" if changed else commit


def write_record(job: Job, result: Mapping[str, Any], commit: str) -> dict[str, Any]:
    """Write a finished job's ``job.json``: its result and the commit of the code that ran it.

    Returns the summary, with ``reused`` false.
    """
    summary = {"regime": job.regime, "seed": job.seed, "folder": job.folder, **result}
    summary["commit"] = commit
    atomic_write_text(job.record, json.dumps(jsonable(summary), indent=1) + "\n")
    return {**summary, "reused": False}


def _run_one(work: Callable[[Job], Mapping[str, Any]], job: Job) -> dict[str, Any]:
    """Run one job and write its summary; return it."""
    return write_record(job, work(job), code_commit())


def run_jobs(
    jobs: Iterable[Job],
    work: Callable[[Job], Mapping[str, Any]],
    workers: int = 1,
    log: Callable[[str], object] = print,
    fresh_process: bool = False,
    backend: str = "local",
    address: str | None = None,
) -> list[dict[str, Any]]:
    """Run every unfinished job with ``work``; return every job's summary, in job order.

    ``work(job)`` returns a JSON-able summary of the finished job.  With
    ``workers`` above 1 the jobs run in that many spawned processes (each
    imports torch afresh: forking a process that holds torch is fragile), so
    ``work`` must be a module-level function; ``fresh_process`` gives each job
    its own process (a model's memory goes back when the job ends).  Each
    summary gains ``regime``, ``seed``, ``folder`` and ``reused`` (the job had
    finished before this run).

    ``backend="ray"`` runs each unfinished job of a phase as a Ray task of
    ``settings["threads"]`` CPUs (1 if unset), on the Ray this process has
    started, else on a local one, or on the cluster at ``address``
    (the module's docstring says how); Ray then decides how many run at once, and
    ``workers`` is not used.  The records are the same.

    Raises:
        ValueError: an unknown backend, or an address without the Ray backend.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if address is not None and backend != "ray":
        raise ValueError(f"an address ({address}) is for backend='ray' only")
    jobs = list(jobs)
    summaries: dict[int, dict[str, Any]] = {}
    with ExitStack() as stack:
        on_ray = None  # connected when a phase first has a job to run
        for phase in sorted({job.phase for job in jobs}):
            pending = _pending(jobs, phase, summaries, log)
            if not pending:
                continue
            if backend == "local":
                mapped = _map(work, [jobs[i] for i in pending], workers, fresh_process)
                ran: Iterator[tuple[int, dict[str, Any]]] = zip(pending, mapped, strict=True)
            else:
                if on_ray is None:
                    on_ray = stack.enter_context(_RayJobs(address, fresh_process))
                    on_ray.check_fits([job for job in jobs if finished(job) is None])
                ran = on_ray.run(work, {index: jobs[index] for index in pending})
                stack.callback(ran.close)  # a stopped run cancels its tasks at once
            for index, summary in ran:
                log(f"  done {summary['regime']} seed {summary['seed']} ({summary['folder']})")
                summaries[index] = summary
    return [summaries[index] for index in range(len(jobs))]


def _pending(
    jobs: list[Job], phase: int, summaries: dict[int, dict[str, Any]], log: Callable
) -> list[int]:
    """The positions of ``phase``'s unfinished jobs; put its finished ones in ``summaries``."""
    pending = []
    for index, job in enumerate(jobs):
        if job.phase != phase:
            continue
        done = finished(job)
        if done is None:
            pending.append(index)
        else:
            summaries[index] = {**done, "reused": True}
    log(
        f"phase {phase}: {len(pending)} job(s) to run, "
        f"{sum(jobs[i].phase == phase for i in summaries)} finished before"
    )
    return pending


def _map(work: Callable, jobs: list[Job], workers: int, fresh_process: bool) -> Iterator[dict]:
    """Yield ``_run_one(work, job)`` for each job, in order, here or in spawned workers."""
    if workers == 1 or len(jobs) < 2:
        yield from (_run_one(work, job) for job in jobs)
        return
    context = multiprocessing.get_context("spawn")
    limit = 1 if fresh_process else None
    with context.Pool(min(workers, len(jobs)), maxtasksperchild=limit) as pool:
        yield from pool.imap(partial(_run_one, work), jobs, chunksize=1)


def _job_cpus(job: Job) -> int:
    """Return the CPUs a job's task reserves: its torch threads (1 if it sets none)."""
    return int(job.settings.get("threads", 1))


def _run(work: Callable[[Job], Mapping[str, Any]], job: Job, folder: str) -> tuple[dict, str]:
    """The body of one task: run ``job`` in ``folder``; return its result and the code's commit."""
    try:
        os.chdir(folder)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"this Ray node has no {folder}, the study's working directory: run the study "
            "from a folder that every node mounts at the same path"
        ) from None
    return dict(work(job)), code_commit()


class _RayJobs:
    """A Ray connection that runs jobs as tasks: ``with _RayJobs(address, fresh) as on_ray``."""

    def __init__(self, address: str | None, fresh_process: bool) -> None:
        from agent_envs.evaluation.ray_backend import ray_session

        self._session = ray_session(address)
        self._fresh_process = fresh_process
        self._commit = code_commit()

    def __enter__(self) -> _RayJobs:
        self._ray = self._session.__enter__()
        # A worker process per task (max_calls=1), or workers reused between tasks.
        self._task = self._ray.remote(max_calls=1 if self._fresh_process else 0)(_run)
        path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        self._env = {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path))}}
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool | None:
        return self._session.__exit__(kind, error, trace)

    def check_fits(self, jobs: list[Job]) -> None:
        """Refuse jobs that no node of the cluster has the CPUs for (they would wait forever).

        Raises:
            ValueError: a job asks for more CPUs than the largest node has.
        """
        nodes = [node["Resources"].get("CPU", 0) for node in self._ray.nodes() if node["Alive"]]
        largest = max(nodes, default=0)
        for job in jobs:
            if _job_cpus(job) > largest:
                raise ValueError(
                    f"{job.regime} seed {job.seed} runs {_job_cpus(job)} threads, but the "
                    f"largest Ray node has {largest:g} CPUs: ask for fewer threads or add "
                    "a larger node"
                )

    def run(
        self, work: Callable[[Job], Mapping[str, Any]], jobs: Mapping[int, Job]
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """Run ``jobs`` (by position) as tasks; yield each (position, summary) as it finishes.

        The summary is written to the job's ``job.json`` before it is yielded.

        Raises:
            RuntimeError: a task ran another commit's code than the driver's.
            Exception: the first job that failed, as it failed; the tasks still
                running are cancelled.
        """
        folder = os.getcwd()
        refs = {
            self._task.options(num_cpus=_job_cpus(job), runtime_env=self._env).remote(
                work, job, folder
            ): (index, job)
            for index, job in jobs.items()
        }
        try:
            while refs:
                (ref,), _ = self._ray.wait(list(refs), num_returns=1)
                index, job = refs.pop(ref)
                result, commit = self._ray.get(ref)
                if commit != self._commit:
                    raise RuntimeError(
                        f"{job.regime} seed {job.seed} ran the code of {commit}, not the "
                        f"driver's {self._commit}: every Ray node needs the checkout {ROOT} "
                        "at the same commit"
                    )
                yield index, write_record(job, result, commit)
        finally:
            for ref in refs:  # a stopped driver leaves no task running for nothing
                self._ray.cancel(ref, force=True)


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """Add a study CLI's ``--backend`` and ``--address`` (alias ``--ray-address``)."""
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="local: this machine's processes (--workers); ray: one Ray task per run",
    )
    parser.add_argument(
        "--address",
        "--ray-address",
        dest="address",
        help="--backend ray: 'auto' or 'ray://HEAD:10001' joins a cluster (default: local Ray)",
    )


def backend_of(args: argparse.Namespace) -> dict[str, Any]:
    """Return the ``run_jobs`` keywords that :func:`add_backend_arguments`' flags set."""
    return {"backend": args.backend, "address": args.address}
