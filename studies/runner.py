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
Ray or a cluster (``backend="ray"``, :mod:`studies.ray_jobs`).  Each backend
writes the same ``job.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
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
    (:mod:`studies.ray_jobs`); Ray then decides how many run at once, and
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
            if not pending:
                continue
            if backend == "ray":
                if on_ray is None:
                    from studies.ray_jobs import RayJobs

                    on_ray = stack.enter_context(RayJobs(address, fresh_process))
                    on_ray.check_fits([job for job in jobs if finished(job) is None])
                ran = on_ray.run(work, {index: jobs[index] for index in pending})
                stack.callback(ran.close)  # a stopped run cancels its tasks at once
            else:
                mapped = _map(work, [jobs[i] for i in pending], workers, fresh_process)
                ran = zip(pending, mapped, strict=True)
            for index, summary in ran:
                log(f"  done {summary['regime']} seed {summary['seed']} ({summary['folder']})")
                summaries[index] = summary
    return [summaries[index] for index in range(len(jobs))]


def _map(work: Callable, jobs: list[Job], workers: int, fresh_process: bool) -> Iterator[dict]:
    """Yield ``_run_one(work, job)`` for each job, in order, here or in spawned workers."""
    if workers == 1 or len(jobs) < 2:
        yield from (_run_one(work, job) for job in jobs)
        return
    context = multiprocessing.get_context("spawn")
    limit = 1 if fresh_process else None
    with context.Pool(min(workers, len(jobs)), maxtasksperchild=limit) as pool:
        yield from pool.imap(partial(_run_one, work), jobs, chunksize=1)


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
