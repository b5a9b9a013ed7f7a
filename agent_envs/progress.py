"""Progress of long runs where no bar can be drawn, and one-off notices of slow steps.

A tqdm bar needs a terminal.  With stderr redirected to a file (a batch job,
``2> run.log``) a run would otherwise be silent until it ends, so
:class:`ProgressLines` writes a one-line record at a steady interval instead:
episodes done, the rate, and the time left at that rate.  A short run, which
ends before the first interval, prints nothing.

:func:`notice` is for a slow step that happens once, such as converting a
GGUF file: it logs on the ``agent_envs.progress`` logger, which the
``agent-envs`` command shows on stderr.

>>> import io
>>> times = iter([0.0, 10.0, 31.0, 40.0])
>>> out = io.StringIO()
>>> lines = ProgressLines(4, 0, "GuessNumber-v0", stream=out, clock=lambda: next(times))
>>> for _ in range(3):
...     lines.update(errors=0)
>>> print(out.getvalue().strip())
progress GuessNumber-v0: 2/4 episodes (50%), 3.9 episodes/min, about 31s left
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import IO

__all__ = ["INTERVAL", "ProgressLines", "format_seconds", "notice", "wants_lines"]

#: Seconds between two progress records.
INTERVAL = 30.0

logger = logging.getLogger(__name__)


def format_seconds(seconds: float) -> str:
    """Return a duration as ``45s``, ``3m 20s`` or ``1h 05m``.

    >>> format_seconds(44.6), format_seconds(200), format_seconds(3900)
    ('45s', '3m 20s', '1h 05m')
    """
    seconds = round(max(seconds, 0.0))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


def wants_lines(stream: IO[str] | None = None) -> bool:
    """Return True where a bar cannot be drawn: ``stream`` (stderr) is no terminal.

    A notebook's stderr is no terminal either, but tqdm draws its own widget
    there, so a running IPython kernel keeps the bar.
    """
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return not (callable(isatty) and isatty()) and "ipykernel" not in sys.modules


class ProgressLines:
    """Write ``progress <name>: done/total episodes (%), rate, time left`` every ``interval`` s.

    ``interval`` defaults to :data:`INTERVAL`.

    ``initial`` episodes were done before (a resumed run): they count toward
    ``done`` but not toward the rate.  ``turns`` returns the turns (agent
    steps) this process has played so far; each record then adds them and
    their rate.  With ``heartbeat`` a thread writes the records on time even
    while no episode finishes (:meth:`beat`), as when a batching policy plays
    every episode in lockstep.  ``clock`` and ``stream`` (default: the
    ``sys.stderr`` of the moment) are for tests.  After at least one record,
    :meth:`close` writes a last one with the whole time taken.
    """

    def __init__(
        self,
        total: int,
        initial: int,
        description: str,
        *,
        interval: float | None = None,
        stream: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        heartbeat: bool = False,
        turns: Callable[[], int] | None = None,
    ) -> None:
        self.total, self.done, self._initial = total, initial, initial
        self._turns = turns
        self.description = description
        self.interval = INTERVAL if interval is None else interval
        self._stream = stream
        self._clock = clock
        self._start = self._last = clock()
        self.records = self._errors = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._beat: threading.Thread | None = None
        if heartbeat:  # batched episodes finish together: records must not wait for them
            self._beat = threading.Thread(target=self._beating, daemon=True)
            self._beat.start()

    def update(self, errors: int) -> None:
        """Count one finished episode; write a record if ``interval`` has passed."""
        with self._lock:
            self.done += 1
            self._errors = errors
            self._maybe_write()

    def _maybe_write(self) -> None:
        now = self._clock()
        if now - self._last >= self.interval:
            self._last = now
            self._write(self._record(now, self._errors))

    def beat(self) -> None:
        """Write a record if ``interval`` has passed, whether or not an episode finished."""
        with self._lock:
            self._maybe_write()

    def _beating(self) -> None:
        """Write a record every ``interval`` even while no episode finishes (``heartbeat``)."""
        while not self._stopped.wait(self.interval):
            self.beat()

    def close(self) -> None:
        """Stop the heartbeat; write the closing record (only if a record was written)."""
        self._stopped.set()
        if self._beat is not None:
            self._beat.join()
        if self.records:
            took = format_seconds(self._clock() - self._start)
            played = f", {self._turns()} turns" if self._turns is not None else ""
            self._write(
                f"progress {self.description}: {self.done}/{self.total} episodes{played} in {took}"
            )

    def _record(self, now: float, errors: int) -> str:
        played, elapsed = self.done - self._initial, max(now - self._start, 1e-9)
        rate = played / elapsed
        share = f"{100 * self.done / self.total:.0f}%" if self.total else "-"
        text = f"progress {self.description}: {self.done}/{self.total} episodes ({share})"
        text += f", {60 * rate:.1f} episodes/min"
        if rate > 0:
            text += f", about {format_seconds((self.total - self.done) / rate)} left"
        else:  # nothing finished yet (episodes played in lockstep finish together)
            text += f", running for {format_seconds(elapsed)}"
        if self._turns is not None:  # the sign of life while no episode finishes
            turns = self._turns()
            text += f", {turns} turns ({60 * turns / elapsed:.1f} turns/min)"
        return text + (f", {errors} errors" if errors else "")

    def _write(self, text: str) -> None:
        stream = sys.stderr if self._stream is None else self._stream
        stream.write(text + "\n")
        stream.flush()
        self.records += 1


def notice(message: str, *args: object) -> None:
    """Log a one-off note on a slow step (``agent-envs`` shows it on stderr)."""
    logger.info(message, *args)
