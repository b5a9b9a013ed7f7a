"""The episodes a transcript browser shows, read from eval run logs written with transcripts.

A run log (:mod:`agent_envs.evaluation.run_log`) is read here, never opened
as :class:`~agent_envs.evaluation.run_log.RunLog` does: that would take the
run's lock and cut a torn last line, and a report must change nothing it reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_envs.files import MAX_LOG_BYTES, open_input
from agent_envs.report.cells import plain
from agent_envs.report.labels import agent_label
from wrappers.errors import InvalidValue
from wrappers.protocol import BUDGET, SUCCESS

__all__ = ["MAX_EPISODES", "end_reason", "read_episodes"]

#: The most episodes of one log a page embeds.  Design decision: every field
#: of a transcript is already clipped, but a run may hold thousands of
#: episodes; the first ones of a log (in the order it was written) are enough
#: to read how an agent plays, and the page says how many were left out.
MAX_EPISODES = 500
#: The longest header line read: a header holds the run's settings, far below this.
_MAX_LINE = 1 << 20


def end_reason(episode: dict[str, Any]) -> str:
    """Return why an episode (a run-log line) ended.

    >>> end_reason({"success": False, "turns": 6, "budget": 6})
    'out of turns'
    """
    if episode.get("error"):
        return "error"
    if episode.get(SUCCESS):
        return SUCCESS
    if episode.get("dead_end_turn") is not None:
        return "dead end"
    if episode.get("turns", 0) >= episode.get(BUDGET, 0):
        return "out of turns"
    return "ended"


def _header(path: Path, first: bytes) -> dict[str, Any]:
    try:
        header = json.loads(first)
    except (UnicodeDecodeError, ValueError, RecursionError):
        header = None
    fmt = header.get("format") if isinstance(header, dict) else None
    if not (isinstance(fmt, str) and fmt.startswith("agent-envs-runlog/")):
        raise InvalidValue(
            f"--log {path} is not an agent-envs run log (no header line); give the JSONL that "
            "`agent-envs eval --log` wrote."
        )
    settings = header.get("settings")
    return settings if isinstance(settings, dict) else {}


def read_episodes(
    path: Path, limit: int = MAX_EPISODES, agent: str = ""
) -> tuple[list[dict[str, Any]], int]:
    """Return up to ``limit`` of the log's episodes that kept a transcript, and how many did.

    Each episode's agent is ``agent`` (the label of the result the log is
    of), or else the label of the agent its header names
    (:func:`~agent_envs.report.labels.agent_label`), as the tables show it.

    The log is read line by line (:func:`~agent_envs.files.open_input`: a
    regular file of at most :data:`~agent_envs.files.MAX_LOG_BYTES`), and only
    the first ``limit`` episodes are kept in memory.

    Raises:
        InvalidValue: the file cannot be read or is not a run log.
    """
    episodes: dict[tuple[Any, ...], dict[str, Any]] = {}
    seen: set[tuple[Any, ...]] = set()
    with open_input(path, "--log", MAX_LOG_BYTES) as handle:
        settings = _header(path, handle.readline(_MAX_LINE))
        named = settings.get("agent_name")
        settings["agent_name"] = agent or (None if named is None else agent_label(str(named)))
        for line in handle:
            try:
                data = json.loads(line)
            except (UnicodeDecodeError, ValueError, RecursionError):
                continue  # a torn last line, or a line the evaluator itself would refuse
            if isinstance(data, dict) and isinstance(data.get("transcript"), dict):
                # A later line for the same episode wins, as when the evaluator resumes.
                key = tuple(repr(data.get(name)) for name in ("task", "sample", BUDGET))
                seen.add(key)
                if key in episodes or len(episodes) < limit:
                    episodes[key] = _episode(data, settings)
    return list(episodes.values()), len(seen)


def _text(value: Any) -> str:
    # The browser shows these as text; a bidi control is shown as its code point there too.
    return "" if value is None else plain(value)


def _episode(data: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Return the fields the browser filters on and shows, all plain JSON values."""
    transcript = data["transcript"]
    steps = transcript.get("steps") if isinstance(transcript.get("steps"), list) else []
    return {
        "env": _text(settings.get("env_name")),
        "agent": _text(settings.get("agent_name")),
        "task": _text(data.get("task")),
        "sample": _text(data.get("sample")),
        BUDGET: _text(data.get(BUDGET)),
        SUCCESS: "yes" if data.get(SUCCESS) else "no",
        "end": end_reason(data),
        "turns": _text(data.get("turns")),
        "error": _text(data.get("error")),
        "observation": _text(transcript.get("observation")),
        "steps": [
            {
                "observation": _text(step.get("observation")),
                "action": _text(step.get("action")),
                # The reply as sent is kept only when it differs from the parsed action.
                "raw": _text(step.get("raw", step.get("action"))),
                "valid": "valid" if step.get("valid", True) else "invalid",
            }
            for step in steps
            if isinstance(step, dict)
        ],
    }
