"""What an evaluation runs: the one settings object, and the episodes it implies."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any

from agent_envs.core import MAX_TASK_ID
from agent_envs.evaluation.keys import EpisodeKey
from wrappers.errors import InvalidValue
from wrappers.utils.seeding import episode_seed
from wrappers.utils.validators import (
    MAX_COUNT,
    MAX_SEED,
    MAX_TURNS,
    check_bool,
    check_grid,
    check_int,
    check_number,
    check_probability,
)

__all__ = [
    "HIDDEN",
    "MAX_BOOTSTRAP",
    "MAX_EPISODES",
    "MAX_STEP_QUALITY",
    "VISIBLE",
    "EvalSettings",
    "check_tasks",
]

#: One run at max(T); first success turns give every T.
HIDDEN = "hidden"
#: One run per T, because the policy can know the budget.
VISIBLE = "visible"

#: The most episodes one run may plan (tasks x samples x budgets run).  Design
#: decision: the plan is a list held in memory (resume and the log check need
#: it), so its size is bounded up front with a clear error instead of a
#: ``MemoryError`` or a hang: a million episodes is far beyond any study run
#: on one machine; split a larger one into runs over task ranges.
MAX_EPISODES = 1_000_000
#: The most bootstrap resamples (``n_bootstrap``).  Design decision: the
#: interval's percentiles are stable to the third decimal long before this, and
#: the bootstrap's time and memory grow with resamples x tasks, so a typo such
#: as ``--n-bootstrap 30000000`` fails at once instead of running for hours
#: after the episodes.
MAX_BOOTSTRAP = 100_000
#: The most step-quality reference states per task (``step_quality``): each
#: costs reference rollouts, and more than this says nothing new about a task.
MAX_STEP_QUALITY = 1_000


def check_tasks(tasks: Any) -> tuple[int, ...]:
    """Return the task ids: ``range(tasks)`` for a count, else the distinct ids given.

    At most :data:`MAX_EPISODES` tasks, checked before any list is built.
    """
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, (Sequence, range)):
        count = check_int(tasks, "tasks (a count)", 1)
        if count > MAX_EPISODES:
            raise InvalidValue(f"tasks must be at most {MAX_EPISODES:,} per run, got {count:,}.")
        return tuple(range(count))
    try:
        size: int | None = len(tasks)
    except OverflowError:  # a range wider than a machine int, such as 0:99999999999999999999
        size = None
    if size is None or size > MAX_EPISODES:
        shown = "more than a machine int holds" if size is None else f"{size:,}"
        raise InvalidValue(f"a run takes at most {MAX_EPISODES:,} task ids, got {shown}.")
    ids = [check_int(task, "every task id", 0) for task in tasks]
    if not ids:
        raise InvalidValue("tasks must not be empty: pass a count or a list of task ids.")
    if len(set(ids)) != len(ids):
        raise InvalidValue(
            "task ids must be distinct: each task is sampled `samples` times already."
        )
    if max(ids) >= MAX_TASK_ID:
        raise InvalidValue(f"task ids must be below {MAX_TASK_ID}, got {max(ids)}.")
    return tuple(ids)


def _setting(default: Any = MISSING, *, episodes: bool = False) -> Any:
    """A settings field; ``episodes=True`` marks one that changes what an episode does."""
    return field(default=default, metadata={"episodes": episodes})


@dataclass(frozen=True)
class EvalSettings:
    """Everything that decides one evaluation: one frozen object, checked when built.

    Build it once (``evaluate``'s keyword form and the CLI build it for you)
    and pass it to ``evaluate(policy, env, settings)``.  The evaluator fills in
    what only a run can tell (the env and agent names, the budget mode, whether
    the env has an oracle) with :meth:`resolved`, and stores that copy in the
    result and in the run log's header, the same object in both places.

    Fields marked ``episodes`` decide which episodes run and what they do:
    two runs whose :meth:`episode_key` is equal play exactly the same
    episodes, which is what lets a run log be resumed.  Design decision: every
    setting that changes what an episode does is one of them, so the resume
    check refuses to mix episodes played differently: the env (with its
    arguments), the wrappers around it that change what the agent sees
    (``wrappers``, e.g. ``ChatHistory`` and its window), the agent (with its
    arguments, secrets masked), the grid, the seed, the budget's
    visibility and ``diagnostics`` (what each episode records).  The others
    (``ks``, the bootstrap, batching, logging, progress, step quality) change
    only how episodes are played or counted, so a resumed run may change them.

    >>> settings = EvalSettings(ks=[1, 2], budgets=[10, 5], tasks=3)
    >>> settings.budgets, settings.tasks, settings.samples
    ((5, 10), (0, 1, 2), 2)

    Attributes:
        ks: the K grid (attempts); every K must be at most ``samples``.
        budgets: the T grid (turns), sorted distinct ints >= 1.
        tasks: the task ids; built from a count (``0..tasks-1``) or a list.
        samples: attempts per task (n); defaults to max(K).
        seed: base seed (int >= 0) of the episodes and of the bootstrap.
        visible_budget: show the turns left in every observation.
        diagnostics: compute the oracle diagnostics when the env has an oracle.
        batch_size: episodes in lockstep for a policy with ``act_batch``
            (default 64; 1 for a policy without it); results do not depend on it.
        log_path: a JSONL run log; a rerun with the same path resumes it.
        transcripts: also log every observation and action (needs ``log_path``).
        retry_errors: on resume, rerun the episodes that ended in an error.
        max_error_rate: stop with ``RunAborted`` when more than this share of
            this run's episodes (and at least 5) raised in the policy.
        n_bootstrap, confidence: the bootstrap interval over tasks.
        progress: show progress: a tqdm bar on a terminal (if tqdm is installed), else a
            one-line record every 30 s (:class:`agent_envs.progress.ProgressLines`).
        step_quality: reference states per task for the step-quality
            diagnostic (0: off); see :mod:`agent_envs.evaluation.step_quality`.
        step_quality_seed: seeds the draw of those states.  Keep it fixed per
            env and study, never the training seed, so that every regime and
            seed is judged on the same states and ``compare`` differences them.
        backend: where episodes are played: ``"local"`` (this process) or
            ``"ray"`` (Ray actors, the ``[ray]`` extra; ``docs/distributed.md``).
            Like the other fields below ``step_quality``, it changes no
            episode: a log resumes on either backend.
        ray_address: ``None`` (start a local Ray instance, or use the one this
            process started), ``"auto"`` or ``"ray://host:10001"`` (join a cluster).
        workers: Ray actors (1 CPU each); default one per CPU of the cluster.
        gpus_per_worker: GPUs each Ray actor reserves (e.g. 1 for one model per GPU).
        chunk_size: episodes per Ray work unit; default chosen from the run's size.
        env_name, agent_name: names to record; the evaluator derives them if
            ``None``.
        wrappers: the wrappers of the env stack that change what an episode
            does (``stack.describe_wrappers``); set by the evaluator.
        mode: ``"hidden"`` or ``"visible"``; set by the evaluator (``None`` before).
    """

    ks: tuple[int, ...] = _setting()
    budgets: tuple[int, ...] = _setting(episodes=True)
    tasks: tuple[int, ...] = _setting(episodes=True)
    samples: int | None = _setting(None, episodes=True)
    seed: int = _setting(0, episodes=True)
    visible_budget: bool = _setting(False, episodes=True)
    diagnostics: bool = _setting(True, episodes=True)
    env_name: str | None = _setting(None, episodes=True)
    agent_name: str | None = _setting(None, episodes=True)
    wrappers: tuple[str, ...] = _setting((), episodes=True)
    mode: str | None = _setting(None, episodes=True)
    batch_size: int | None = _setting(None)
    log_path: str | None = _setting(None)
    transcripts: bool = _setting(False)
    retry_errors: bool = _setting(False)
    max_error_rate: float = _setting(0.2)
    n_bootstrap: int = _setting(1000)
    confidence: float = _setting(0.95)
    progress: bool = _setting(False)
    step_quality: int = _setting(0)
    step_quality_seed: int = _setting(0)
    backend: str = _setting("local")
    ray_address: str | None = _setting(None)
    workers: int | None = _setting(None)
    gpus_per_worker: float = _setting(0.0)
    chunk_size: int | None = _setting(None)

    def __post_init__(self) -> None:
        ks = check_grid(self.ks, "ks (K)")
        samples = max(ks) if self.samples is None else check_int(self.samples, "samples", 1)
        if max(ks) > samples:
            raise InvalidValue(
                f"K={max(ks)} is larger than samples={samples}: Pass@K needs at least K "
                "attempts per task; raise samples (n) or lower K."
            )
        for name in ("visible_budget", "diagnostics", "transcripts", "retry_errors", "progress"):
            check_bool(getattr(self, name), name)
        if self.mode not in (None, HIDDEN, VISIBLE):
            raise InvalidValue(f"mode must be {HIDDEN!r}, {VISIBLE!r} or None, got {self.mode!r}.")
        self._check_backend()
        if self.transcripts and self.log_path is None:
            raise InvalidValue("transcripts are written to the run log: pass log_path as well.")
        check_probability(self.max_error_rate, "max_error_rate")
        check_number(self.confidence, "confidence", 0.0, 1.0, open_low=True, open_high=True)
        checked = {
            "ks": ks,
            "budgets": check_grid(self.budgets, "budgets (T)", MAX_TURNS),
            "tasks": check_tasks(self.tasks),
            "samples": samples,
            "seed": check_int(self.seed, "seed", 0, MAX_SEED),
            "n_bootstrap": check_int(self.n_bootstrap, "n_bootstrap", 1, MAX_BOOTSTRAP),
            "step_quality": check_int(self.step_quality, "step_quality", 0, MAX_STEP_QUALITY),
            "step_quality_seed": check_int(
                self.step_quality_seed, "step_quality_seed", 0, MAX_SEED
            ),
            "wrappers": tuple(str(wrapper) for wrapper in self.wrappers),
            "batch_size": None
            if self.batch_size is None
            else check_int(self.batch_size, "batch_size", 1, MAX_EPISODES),
            "log_path": None if self.log_path is None else os.fspath(self.log_path),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)  # frozen: normalise once, here
        # Before the evaluator knows the mode, count as hidden (the fewest episodes).
        per_task = samples * (len(self.budgets) if self.mode == VISIBLE else 1)
        episodes = len(self.tasks) * per_task
        if episodes > MAX_EPISODES:
            raise InvalidValue(
                f"this run would play {episodes:,} episodes (tasks x samples"
                f"{' x budgets' if self.mode == VISIBLE else ''}), more than the {MAX_EPISODES:,} "
                "one run may plan; lower samples or split the tasks over several runs."
            )

    def _check_backend(self) -> None:
        if self.backend not in ("local", "ray"):
            raise InvalidValue(f"backend must be 'local' or 'ray', got {self.backend!r}.")
        if self.ray_address is not None and (
            not isinstance(self.ray_address, str) or not self.ray_address
        ):
            raise InvalidValue(
                f"ray_address must be 'auto' or 'ray://host:port', got {self.ray_address!r}."
            )
        for name in ("workers", "chunk_size"):
            if getattr(self, name) is not None:
                check_int(getattr(self, name), name, 1, MAX_COUNT)
        check_number(self.gpus_per_worker, "gpus_per_worker", 0.0, MAX_COUNT)
        if self.backend == "local":
            for name in ("ray_address", "workers", "gpus_per_worker", "chunk_size"):
                if getattr(self, name):
                    raise InvalidValue(f"{name} needs backend='ray' (--backend ray).")

    def resolved(self, **found: Any) -> EvalSettings:
        """Return a copy with what the run found filled in (names, mode, diagnostics)."""
        return replace(self, **found)

    @property
    def run_budgets(self) -> tuple[int, ...]:
        """The budgets episodes are played at: max(T) alone when the budget is hidden."""
        return (max(self.budgets),) if self.mode == HIDDEN else self.budgets

    def plan(self) -> list[EpisodeKey]:
        """Return every episode, in a fixed order: budget, then task, then attempt."""
        seeds = {
            (task, sample): episode_seed(self.seed, task, sample)
            for task in self.tasks
            for sample in range(self.samples)
        }
        return [
            EpisodeKey(task, sample, budget, seeds[task, sample])
            for budget in self.run_budgets
            for task in self.tasks
            for sample in range(self.samples)
        ]

    def episode_key(self) -> dict[str, Any]:
        """Return the fields that decide the episodes (JSON-ready): the resume check."""
        data = self.to_json()
        return {item.name: data[item.name] for item in fields(self) if item.metadata["episodes"]}

    def fingerprint(self) -> str:
        """Return a short hash of :meth:`episode_key`: the run every log line belongs to.

        The agent's name holds its own fingerprint (a hash of its model files,
        when it has one), so this changes with the model as well as with the
        env, the grid, the seed and the budget's visibility.
        """
        text = json.dumps(self.episode_key(), sort_keys=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        """Return the settings as a JSON-ready dict (tuples become lists)."""
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in asdict(self).items()
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvalSettings:
        """Rebuild settings from :meth:`to_json` output, with a one-line error if malformed."""
        if not isinstance(data, dict):
            raise InvalidValue(f"settings must be a JSON object, got {type(data).__name__}.")
        known = {item.name for item in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidValue(f"settings have unknown fields {unknown}.")
        settings = cls(**data)
        # Stored grids are already normal: rows and columns of stored arrays follow them.
        for name in ("ks", "budgets"):
            if list(getattr(settings, name)) != data.get(name):
                raise InvalidValue(
                    f"settings {name} must be sorted and distinct, got {data[name]}."
                )
        return settings
