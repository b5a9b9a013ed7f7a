"""The bookkeeping of one evaluation run: log, progress, resume and the error stop."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from agent_envs import __version__
from agent_envs.errors import CommandError
from agent_envs.evaluation.episode_record import EpisodeRecord
from agent_envs.evaluation.formatting import error_summary
from agent_envs.evaluation.run_log import RunLog
from agent_envs.evaluation.settings import EvalSettings
from agent_envs.progress import ProgressLines, wants_lines

__all__ = ["MIN_ERRORS_TO_STOP", "Progress", "RunAborted", "RunState"]

logger = logging.getLogger(__name__)

#: The error-rate stop only applies once this many episodes have failed.
MIN_ERRORS_TO_STOP = 5


class RunAborted(CommandError, RuntimeError):
    """The policy raised on too many episodes; the run stopped (its log is kept)."""


class Progress:
    """A tqdm bar when asked for on a terminal, one-line records elsewhere.

    Where stderr is no terminal (redirected to a file) a bar cannot be drawn,
    so :class:`agent_envs.progress.ProgressLines` writes a record at a steady
    interval instead; so it does on a terminal without tqdm (tqdm comes with
    the ``[all]`` extra, not with the ``[plot]`` install of the main job).
    """

    def __init__(
        self,
        enabled: bool,
        total: int,
        initial: int,
        description: str,
        turns: Callable[[], int] | None = None,
    ) -> None:
        self._bar: Any = None
        self._lines = False
        if not enabled:
            return
        tqdm = None if wants_lines() else _tqdm()
        if tqdm is None:
            self._lines = True
            self._bar = ProgressLines(total, initial, description, heartbeat=True, turns=turns)
        else:
            self._bar = tqdm(total=total, initial=initial, desc=description, unit="ep")

    def update(self, errors: int) -> None:
        """Count one finished episode; show the error count once there are errors."""
        if self._lines:
            self._bar.update(errors)
        elif self._bar is not None:
            self._bar.update(1)
            if errors:
                self._bar.set_postfix(errors=errors, refresh=False)

    def close(self) -> None:
        """Close the bar or write the last record (if any)."""
        if self._bar is not None:
            self._bar.close()


def _tqdm() -> Any:
    """Return ``tqdm.auto.tqdm``, or ``None`` where tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class RunState:
    """The episodes of one run: what the log already holds, what is left, what finished.

    Used as a context manager around the rollout so that the log and the
    progress bar are closed whatever happens (KeyboardInterrupt included).
    ``turns`` returns the turns played so far, which the progress records show.
    """

    def __init__(self, settings: EvalSettings, turns: Callable[[], int] | None = None) -> None:
        self.plan = settings.plan()
        log_path = settings.log_path
        self.log = RunLog.open(log_path, settings, __version__) if log_path else None
        done = {} if self.log is None else dict(self.log.records)
        if settings.retry_errors:
            done = {ident: record for ident, record in done.items() if record.error is None}
        wanted = {key.ident for key in self.plan}
        self.done = {ident: record for ident, record in done.items() if ident in wanted}
        self.todo = [key for key in self.plan if key.ident not in self.done]
        if self.log is not None and self.log.records:
            redo = len(self.log.records) - len(self.done)
            logger.info(
                "Resuming %s: %d finished episodes found, %d to run%s.",
                self.log.path,
                len(self.done),
                len(self.todo),
                f" ({redo} of them errors, redone)" if settings.retry_errors and redo else "",
            )
        self.fresh: dict[tuple, EpisodeRecord] = {}
        self.errors = self.turns = 0
        self._error_kinds: Counter[str] = Counter()
        self._max_error_rate = settings.max_error_rate
        name = (settings.env_name or "").split("/")[-1]
        self._bar = Progress(settings.progress, len(self.plan), len(self.done), name, turns)

    def __enter__(self) -> RunState:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._bar.close()
        if self.log is not None:
            self.log.close()

    def finish(self, record: EpisodeRecord, transcript: dict[str, Any] | None = None) -> None:
        """Log one finished episode; stop the run if the policy fails too often.

        Whatever plays the episodes (this process or Ray workers), this is the
        one place that writes the run log.
        """
        if self.log is not None:
            self.log.append(record, transcript)
        self.fresh[record.ident] = record
        self.turns += record.turns
        if record.error is not None:
            self.errors += 1
            self._error_kinds[record.error] += 1
            finished = len(self.fresh)
            if self.errors >= MIN_ERRORS_TO_STOP and self.errors > self._max_error_rate * finished:
                resume = (
                    " with the same log and retry_errors=True (--retry-errors) to redo them."
                    if self.log is not None
                    else "."
                )
                raise RunAborted(
                    f"Stopped after {finished} episodes: {self.errors} raised an error in the "
                    f"policy (more than max_error_rate={self._max_error_rate:g}): "
                    f"{error_summary(self._error_kinds.items())}. Fix the policy and rerun{resume}"
                )
        self._bar.update(self.errors)

    def records(self) -> list[EpisodeRecord]:
        """Every episode of the plan, in plan order (fresh ones win over logged ones)."""
        return [self.fresh.get(key.ident) or self.done[key.ident] for key in self.plan]
