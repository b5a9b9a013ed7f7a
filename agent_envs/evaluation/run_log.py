"""Durable runs: a JSONL log of finished episodes that a rerun resumes from.

The first line is a header with the run's settings and fingerprint
(:meth:`EvalSettings.fingerprint`, a hash of everything that decides the
episodes, the agent's model files included); every other line is one
finished episode (:meth:`EpisodeRecord.to_json`, plus ``transcript`` when
asked) marked ``"run": <fingerprint>``.  A line with another run's
fingerprint (pasted in from another log, say) is refused with its line
number, so a resumed run never counts an episode it did not play.  A line
is written in one call and flushed, so a crash leaves at most one
half-written last line, which the next open drops and the run redoes.

One run owns its log.  Design decision: :meth:`RunLog.open` takes an exclusive
OS lock (``fcntl.flock``) on the log file itself before it reads a byte, and
:meth:`RunLog.close` drops it; a second run on a locked log fails at once
with :class:`RunLogLocked`, naming the log.  The lock belongs to the open
file, so the OS drops it when the process dies (no stale lock files to clean
up), and it must be taken by the one process that writes the log: with a
distributed backend, the driver.  Without ``fcntl`` (Windows) runs are not
locked against each other.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows)
    fcntl = None  # type: ignore[assignment]
from typing import IO, Any

from agent_envs.evaluation.episode_record import EpisodeRecord
from agent_envs.evaluation.settings import EvalSettings
from agent_envs.files import MAX_LOG_BYTES, path_error, read_input
from agent_envs.redaction import scrub
from wrappers.errors import InvalidValue

__all__ = ["ANOTHER_LOG", "LOG_FORMAT", "RunLog", "RunLogLocked", "another_log"]

# /2: episodes record every judged turn and the per-error recovery (oracle_errors).
# /3: the header holds the whole EvalSettings; resuming compares its episode fields.
# /4: an error is recovered only by a later turn that gets strictly closer to the
#     goal (a /3 log counted a wasted turn as recovered at once): its
#     oracle_errors mean something else, so it is not resumed.
# /5: the header and every episode line carry the run's fingerprint.
# /6: an error is recovered only by a turn strictly closer than both the state
#     before it and the state right after it: /5 oracle_errors credit
#     a wasted turn after an error that itself moved closer, so it is not resumed.
LOG_FORMAT = "agent-envs-runlog/6"
#: What every error about a run log tells ``eval`` to pass; a command without
#: ``--log`` says its own remedy instead (:func:`another_log`).
ANOTHER_LOG = "another --log path"


def _short(value: Any, limit: int = 100) -> str:
    text = repr(value)
    # Both ends: two agent names differ in their fingerprint, at the very end.
    head = limit // 3
    return text if len(text) <= limit else f"{text[:head]}...{text[head + 3 - limit :]}"


def _describe_difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = sorted(set(old) | set(new))
    changes = [
        f"{key}: {_short(old.get(key))} -> {_short(new.get(key))}"
        for key in keys
        if old.get(key) != new.get(key)
    ]
    return "; ".join(changes) or "unknown difference"


def _check_header(path: Path, header: Any, settings: EvalSettings) -> None:
    """Refuse a log that is not one, is of another format, or was written for other episodes."""
    fmt = header.get("format") if isinstance(header, dict) else None
    old = isinstance(fmt, str) and fmt.startswith("agent-envs-runlog/")
    if old and fmt != LOG_FORMAT:
        raise InvalidValue(
            f"{path} is an older run log ({fmt}; this version writes {LOG_FORMAT}, whose "
            "lines carry the run's fingerprint and today's diagnostics), so its episodes "
            f"cannot be checked against this run; pass {ANOTHER_LOG}."
        )
    if not isinstance(header, dict) or fmt != LOG_FORMAT:
        raise InvalidValue(
            f"{path} is not an agent-envs run log (no header line); "
            f"pass {ANOTHER_LOG} or delete the file."
        )
    # Only the fields that change what an episode does must match.
    wanted = settings.episode_key()
    logged = header.get("settings") if isinstance(header.get("settings"), dict) else {}
    logged = {key: logged.get(key) for key in wanted}
    if logged != wanted:
        raise InvalidValue(
            f"{path} was written with different settings "
            f"({_describe_difference(logged, wanted)}); "
            f"use {ANOTHER_LOG}, or the same settings to resume."
        )


def another_log(message: str, instead: str) -> str:
    """Return a run-log error ``message`` saying ``instead`` where it says :data:`ANOTHER_LOG`.

    For a command that has no ``--log`` flag (``bench``: its logs lie in ``--out``).
    """
    return message.replace(ANOTHER_LOG, instead)


class RunLogLocked(OSError):
    """Another run holds this run log."""


def _lock(handle: IO[str], path: Path) -> None:
    """Take the exclusive lock on ``handle``'s file, or fail at once with :class:`RunLogLocked`."""
    if fcntl is None:  # pragma: no cover
        return
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise RunLogLocked(
            f"run log {path} is in use by another run; wait for it to end (then rerun to "
            f"resume) or pass {ANOTHER_LOG}."
        ) from None


class RunLog:
    """An open run log: the episodes it already holds, and an append handle.

    Use :meth:`open`; write finished episodes with :meth:`append`.
    """

    def __init__(
        self, path: Path, handle: IO[str], records: dict[tuple, EpisodeRecord], run: str
    ) -> None:
        self.path = path
        self._handle = handle
        #: The run's fingerprint, written on every line.
        self.run = run
        #: Finished episodes by ``(task_id, sample, budget)``; a later line wins.
        self.records = records

    @classmethod
    def open(cls, path: str | os.PathLike[str], settings: EvalSettings, version: str) -> RunLog:
        """Open ``path`` for ``settings``: create it, or check and load what it holds.

        Raises:
            ValueError: the file is not a run log, is corrupt before its last
                line, or was written with different settings.
            OSError: the file cannot be read or written.
        """
        path = Path(path)
        run = settings.fingerprint()
        header = {"type": "header", "format": LOG_FORMAT, "version": version, "run": run}
        records: dict[tuple, EpisodeRecord] = {}
        if path.is_dir():
            raise InvalidValue(
                f"run log {path} is a directory; give a file path such as run.jsonl."
            )
        if path.parent and not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        # Locked before anything is read, so that no other run changes it under us.
        handle = path.open("a", encoding="utf-8")
        _lock(handle, path)
        try:
            if path.stat().st_size > 0:
                records = cls._load(path, settings)
            else:
                handle.write(scrub(json.dumps({**header, "settings": settings.to_json()})) + "\n")
                handle.flush()
        except OSError as exc:
            handle.close()
            raise path_error(exc, path) from None
        except BaseException:
            handle.close()
            raise
        return cls(path, handle, records, run)

    @staticmethod
    def _load(path: Path, settings: EvalSettings) -> dict[tuple, EpisodeRecord]:
        data = read_input(path, "run log", MAX_LOG_BYTES)
        lines = data.split(b"\n")
        # A final piece without a newline is a write cut short by a crash.
        keep = len(data) - len(lines[-1])
        body = lines[:-1]
        try:
            header = json.loads(body[0]) if body else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            header = None
        _check_header(path, header, settings)
        records: dict[tuple, EpisodeRecord] = {}
        budgets, tasks, run = set(settings.budgets), set(settings.tasks), settings.fingerprint()
        for number, line in enumerate(body[1:], start=2):
            try:
                data = json.loads(line)
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                if number == len(body):
                    # The last complete line may still be a torn write: redo it.
                    keep -= len(line) + 1
                    break
                raise InvalidValue(
                    f"{path}:{number} is corrupt ({exc}); fix or delete that line."
                ) from None
            try:  # whole JSON is no torn write: an impossible episode is never deleted
                record = EpisodeRecord.from_json(data)
            except (ValueError, TypeError) as exc:
                raise InvalidValue(
                    f"{path}:{number} is corrupt ({exc}); fix or delete that line."
                ) from None
            if data.get("run") != run:
                raise InvalidValue(
                    f"{path}:{number} is an episode of another run (fingerprint "
                    f"{str(data.get('run'))[:20]!r}, this run's is {run!r}); delete that line, "
                    f"or pass {ANOTHER_LOG}."
                )
            task_id, sample, budget = record.ident
            if task_id not in tasks or budget not in budgets or not 0 <= sample < settings.samples:
                raise InvalidValue(f"{path}:{number} holds an episode outside this run's plan.")
            records[record.ident] = record
        if keep != len(data):
            with path.open("r+b") as handle:
                handle.truncate(keep)
        return records

    def append(self, record: EpisodeRecord, transcript: dict[str, Any] | None = None) -> None:
        """Write one finished episode as a line and flush it."""
        line = {**record.to_json(), "run": self.run}
        if transcript is not None:
            line["transcript"] = transcript
        # Masked as a whole line: an error or a transcript may hold an echoed secret.
        try:
            self._handle.write(scrub(json.dumps(line)) + "\n")
            self._handle.flush()
        except OSError as exc:  # a full disk: say which file could not grow
            raise path_error(exc, self.path) from None

    def close(self) -> None:
        """Close the append handle, which releases the run's lock on the log."""
        self._handle.close()
