"""A study's jobs as Ray tasks: what ``run_jobs(..., backend="ray")`` runs them with.

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
  (:func:`studies.runner.code_commit`) and the driver refuses a result of any
  other commit than its own.  On a cluster every node therefore needs the
  checkout at the same path, the same virtual environment, and the study's
  folders on a file system they share (``docs/distributed.md``).

Ray is imported only when a study runs on it, through the evaluator's Ray
backend (the same install hint, and the same rules for starting or joining
a Ray instance).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from agent_envs.evaluation.ray_backend import ray_session
from studies.runner import Job, code_commit, write_record

__all__ = ["ROOT", "RayJobs", "job_cpus"]

#: The root of the checkout the driver runs: every task imports from it.
ROOT = Path(__file__).resolve().parents[1]


def job_cpus(job: Job) -> int:
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


class RayJobs:
    """A Ray connection that runs jobs as tasks: ``with RayJobs(address, fresh) as on_ray``."""

    def __init__(self, address: str | None, fresh_process: bool) -> None:
        self._session = ray_session(address)
        self._fresh_process = fresh_process
        self._commit = code_commit()

    def __enter__(self) -> RayJobs:
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
            if job_cpus(job) > largest:
                raise ValueError(
                    f"{job.regime} seed {job.seed} runs {job_cpus(job)} threads, but the "
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
            self._task.options(num_cpus=job_cpus(job), runtime_env=self._env).remote(
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
