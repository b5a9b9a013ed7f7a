"""The Ray backend: play an evaluation's episodes on Ray actors, log them on the driver.

``EvalSettings(backend="ray")`` (CLI: ``--backend ray``) swaps the local
executor for :class:`RayExecutor`; planning, the run log, resume, the error
stop, the progress bar and the numbers stay the runner's, so both backends
give the same result and a log started on one resumes on the other.

* **Work units.**  The keys still to play are cut into chunks of (task,
  sample, budget) keys.  Each actor builds its policy and env stacks once and
  plays whole chunks with the local executor (lockstep ``act_batch`` included),
  returning the finished records.  Two chunks are in flight per actor, so an
  actor never waits for the driver.
* **The policy** is shipped pickled: an :class:`~agent_envs.plugins.AgentSpec`
  (built inside each actor), or any picklable policy, class or ``PerEpisode``
  factory.  An unpicklable one is refused before anything runs.
* **The driver is the only writer.**  Actors return records; the driver
  writes each to the log as its chunk arrives.
* **Faults.**  A chunk is written only once it is complete, so a worker that
  dies (killed, out of memory, lost node) loses its chunk and nothing else:
  a fresh actor replaces it and the chunk is played again.  A chunk that kills
  its worker :data:`MAX_CHUNK_ATTEMPTS` times stops the run with the cause;
  the log keeps every finished episode for a resume.

Ray is imported only when a run uses this backend.
"""

from __future__ import annotations

import logging
import math
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agent_envs import install_hint
from agent_envs.env_stack import StackRecipe
from agent_envs.evaluation.episode_record import EpisodeRecord
from agent_envs.evaluation.executor import LocalExecutor
from agent_envs.evaluation.keys import EpisodeKey
from agent_envs.evaluation.policies import adapt_policy, describe_error
from agent_envs.evaluation.rollout import Finish, RunOptions
from agent_envs.evaluation.session import RunAborted
from agent_envs.evaluation.settings import EvalSettings
from agent_envs.redaction import ScrubbingStream, remember, scrub
from wrappers.errors import InvalidType, InvalidValue

__all__ = [
    "MAX_CHUNK_ATTEMPTS",
    "EpisodeWorker",
    "RayExecutor",
    "chunk_size",
    "import_ray",
    "ray_session",
]

logger = logging.getLogger(__name__)

#: CPUs each actor reserves.
CPUS_PER_WORKER = 1
#: A chunk that has killed this many workers stops the run.
MAX_CHUNK_ATTEMPTS = 3
#: Chunks queued on each actor, so that it never idles while the driver logs.
IN_FLIGHT_PER_WORKER = 2
#: Default chunking: about this many chunks per worker, for load balance...
CHUNKS_PER_WORKER = 8
#: ... but never more episodes than this in one chunk (a lost chunk is redone).
MAX_CHUNK_SIZE = 256

_POLICY_HINT = (
    "pass AgentSpec('module:Class', kwargs) from agent_envs.plugins (each worker then builds "
    "its own agent; the CLI's --agent does this), or a picklable class or PerEpisode factory"
)
_ENV_HINT = "pass a registered env id, or a module-level function that builds the env"


def import_ray() -> Any:
    """Return the ``ray`` module, or say how to install it (the ``[ray]`` extra)."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            f"backend='ray' needs Ray, which is not installed: {install_hint('ray')}."
        ) from None
    return ray


@contextmanager
def ray_session(address: str | None) -> Iterator[Any]:
    """Yield ``ray``, connected for the length of the ``with`` block.

    If this process has called ``ray.init`` already, that instance is used and
    left running.  Otherwise ``address`` ``None`` starts a local instance sized
    to this machine, and ``"auto"`` or ``"ray://host:10001"`` joins a cluster;
    either is shut down when the block ends.
    """
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        if address is None:
            ray.init(include_dashboard=False, logging_level=logging.WARNING)
        else:
            ray.init(address=address, logging_level=logging.WARNING)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


@dataclass(frozen=True)
class _Job:
    """What every actor is built from: shipped once through the object store.

    Attributes:
        policy: the policy as given.
        stack: the stack the policy plays; each actor builds its own.
        options: what each episode records.
        batch_size: lockstep slots for a policy with ``act_batch``.
    """

    policy: Any
    stack: StackRecipe
    options: RunOptions
    batch_size: int


class EpisodeWorker:
    """The body of one Ray actor: a local executor, built once, that plays chunks of keys."""

    def __init__(self, job: _Job) -> None:
        # Ray keeps a worker's output in log files on disk: scrub it as the CLI
        # scrubs its own (the agent's secrets are remembered when it is built).
        remember((), environment=True)
        sys.stdout, sys.stderr = ScrubbingStream(sys.stdout), ScrubbingStream(sys.stderr)
        # Build an env stack now, so that a worker that cannot fails at creation.
        build = job.stack.build
        self._local = LocalExecutor(
            adapt_policy(job.policy), build, job.options, job.batch_size, [build()]
        )

    def play(self, keys: Sequence[EpisodeKey]) -> tuple[list[tuple[EpisodeRecord, Any]], int]:
        """Play ``keys``; return each finished (record, transcript) and the policy calls made."""
        finished: list[tuple[EpisodeRecord, Any]] = []
        before = self._local.policy_calls
        self._local.run(keys, lambda record, transcript: finished.append((record, transcript)))
        return finished, self._local.policy_calls - before


def _pickle_check(ray: Any, obj: Any, what: str, hint: str) -> None:
    try:
        ray.cloudpickle.dumps(obj)
    except Exception as exc:  # pickling fails with many types (TypeError, PicklingError, ...)
        raise InvalidType(
            f"{what} cannot be sent to Ray workers ({describe_error(exc, 200)}): {hint}."
        ) from None


def _build_failed(exc: BaseException) -> RunAborted:
    """Explain an actor that could not build its policy or env (the same in every worker)."""
    lines = [line.strip() for line in scrub(str(exc)).splitlines() if line.strip()]
    cause = lines[-1] if lines else type(exc).__name__
    return RunAborted(
        f"a Ray worker could not build the policy or the env ({cause}); every node needs "
        "the packages that define them: install them there, or pass ray.init a runtime_env."
    )


def chunk_size(episodes: int, workers: int, batch_size: int, batched: bool) -> int:
    """Return the default number of episodes per chunk.

    >>> chunk_size(10_000, 2, 1, False), chunk_size(100, 2, 1, False), chunk_size(100, 2, 64, True)
    (256, 7, 50)
    """
    per_worker = math.ceil(episodes / workers)
    size = min(math.ceil(per_worker / CHUNKS_PER_WORKER), MAX_CHUNK_SIZE)
    if batched:  # a chunk smaller than a batch would starve act_batch
        size = max(size, min(batch_size, per_worker))
    return max(1, size)


class RayExecutor:
    """Play episodes on Ray actors; the driver (the caller of :meth:`run`) logs them."""

    name = "ray"

    def __init__(
        self,
        settings: EvalSettings,
        policy: Any,
        stack: StackRecipe,
        options: RunOptions,
        batched: bool,
    ) -> None:
        ray = import_ray()
        _pickle_check(ray, policy, f"the policy {type(policy).__name__}", _POLICY_HINT)
        _pickle_check(ray, stack, "the env factory", _ENV_HINT)
        self.settings = settings
        self.workers = 0
        self.policy_calls = 0
        #: Turns of the episodes received so far (a worker's chunk arrives whole).
        self.turns = 0
        self._job = _Job(policy, stack, options, settings.batch_size)
        self._batched = batched

    def run(self, keys: Sequence[EpisodeKey], finish: Finish) -> None:
        """Play ``keys`` on Ray actors; call ``finish`` for each episode as its chunk arrives."""
        if not keys:
            return
        with ray_session(self.settings.ray_address) as ray:
            self._play(ray, list(keys), finish)

    def _worker_count(self, ray: Any) -> int:
        """Return the workers asked for (default: as many as the cluster's CPUs and GPUs hold)."""
        resources = ray.cluster_resources()
        cpus, gpus = resources.get("CPU", 0), resources.get("GPU", 0)
        each = self.settings.gpus_per_worker
        fits = int(cpus // CPUS_PER_WORKER)
        if each > 0:
            fits = min(fits, int(gpus // each))
        wanted = self.settings.workers or max(fits, 1)
        if wanted > fits:
            # An actor that cannot be placed would hold its chunks forever.
            need = f"{wanted * CPUS_PER_WORKER} CPUs, but the cluster has {cpus:g}"
            if each > 0:
                need = (
                    f"{wanted * CPUS_PER_WORKER} CPUs and {wanted * each:g} GPUs "
                    f"(gpus_per_worker {each:g}), but the cluster has {cpus:g} and {gpus:g}"
                )
            raise InvalidValue(
                f"{wanted} Ray workers need {need}: ask for fewer workers (--workers) or add nodes."
            )
        return wanted

    def _play(self, ray: Any, keys: list[EpisodeKey], finish: Finish) -> None:
        workers = self._worker_count(ray)
        size = self.settings.chunk_size or chunk_size(
            len(keys), workers, self._job.batch_size, self._batched
        )
        chunks = deque((keys[start : start + size], 0) for start in range(0, len(keys), size))
        workers = self.workers = min(workers, len(chunks))
        actor_class = ray.remote(EpisodeWorker).options(
            num_cpus=CPUS_PER_WORKER, num_gpus=self.settings.gpus_per_worker
        )
        job = ray.put(self._job)
        actors = [actor_class.remote(job) for _ in range(workers)]
        # ref -> (actor slot, the actor it went to, chunk, earlier attempts)
        in_flight: dict[Any, tuple[int, Any, list[EpisodeKey], int]] = {}
        seen: set[tuple[int, int, int]] = set()

        def fill() -> None:
            for slot, actor in enumerate(actors):
                load = sum(1 for entry in in_flight.values() if entry[1] is actor)
                for _ in range(IN_FLIGHT_PER_WORKER - load):
                    if not chunks:
                        return
                    chunk, attempts = chunks.popleft()
                    in_flight[actor.play.remote(chunk)] = (slot, actor, chunk, attempts)

        lost = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError)
        try:
            fill()
            while in_flight:
                (ref,), _ = ray.wait(list(in_flight), num_returns=1)
                slot, actor, chunk, attempts = in_flight.pop(ref)
                try:
                    finished, calls = ray.get(ref)
                except lost as exc:
                    if getattr(exc, "actor_init_failed", False):
                        raise _build_failed(exc) from None
                    self._redo(chunk, attempts, exc, chunks)
                    if actors[slot] is actor:  # its first lost chunk: replace the actor
                        ray.kill(actor, no_restart=True)
                        actors[slot] = actor_class.remote(job)
                    fill()
                    continue
                self.policy_calls += calls
                for record, transcript in finished:
                    if record.ident not in seen:  # each episode is logged once
                        seen.add(record.ident)
                        self.turns += record.turns
                        finish(record, transcript)
                fill()
        finally:
            for actor in actors:
                ray.kill(actor, no_restart=True)

    @staticmethod
    def _redo(chunk: list[EpisodeKey], attempts: int, exc: BaseException, chunks: deque) -> None:
        """Queue a chunk whose worker died again, or stop when it keeps killing workers."""
        attempts += 1
        first = chunk[0]
        if attempts >= MAX_CHUNK_ATTEMPTS:
            # Ray's message spans many lines (the worker's exit details); one line, the cause.
            cause = " ".join(describe_error(exc, 10_000).split())
            raise RunAborted(
                f"a chunk of {len(chunk)} episodes (from task {first.task_id}, sample "
                f"{first.sample}, budget {first.budget}) lost its Ray worker {attempts} times; "
                f"last cause: {cause[:300]}. Finished episodes are in the log, if any: rerun "
                "to resume."
            ) from None
        logger.warning(
            "a Ray worker died (%s); replaying its chunk of %d episodes.",
            describe_error(exc, 200),
            len(chunk),
        )
        chunks.appendleft((chunk, attempts))
