"""Chat messages for one turn: built from the dialogue, trimmed, and rendered without a template.

:func:`build_messages` turns an observation and ``info["messages"]`` (from
``wrappers.ChatHistory``) into the chat a model is prompted with;
:func:`drop_oldest_exchanges` trims a dialogue that is too long, always
keeping the system prompt, the task statement and the latest exchange; and
:func:`turn_of` is the turn a sampling seed is keyed on.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from wrappers.protocol import MESSAGES, TURN

__all__ = [
    "build_messages",
    "count_exchanges",
    "drop_exchanges",
    "drop_oldest_exchanges",
    "insert_examples",
    "merge_system_into_user",
    "plain_prompt",
    "turn_of",
]


def build_messages(observation: str, info: Mapping[str, Any], system_prompt: str | None) -> list:
    """Return the chat messages for one turn.

    With ``wrappers.ChatHistory`` in the stack, ``info["messages"]`` is the
    dialogue so far; otherwise the dialogue is the current observation alone.
    The last user message is always ``observation`` itself: wrappers outside
    ``ChatHistory`` (``ShowActions``, a visible ``TurnBudget``) add to the
    observation, and the model must see what they added, at least for the
    current turn.  ``system_prompt`` is put first unless the messages already
    open with a system message (the wrapper's then wins).  The result is a
    fresh list of fresh dicts.
    """
    history = info.get(MESSAGES)
    if history is None:
        messages = [{"role": "user", "content": observation}]
    else:
        if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
            raise TypeError(
                f"info['messages'] must be a list of chat messages, got {type(history).__name__}."
            )
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in history]
        if not messages:
            messages = [{"role": "user", "content": observation}]
        elif messages[-1]["role"] == "user":
            messages[-1]["content"] = observation
        else:
            messages.append({"role": "user", "content": observation})
    if system_prompt and messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


def insert_examples(messages: list, examples: Sequence[Mapping[str, str]]) -> list:
    """Return ``messages`` with ``examples`` (earlier chat turns) after any system message."""
    if not examples:
        return messages
    head = 1 if messages and messages[0]["role"] == "system" else 0
    return [*messages[:head], *(dict(m) for m in examples), *messages[head:]]


def _head_length(messages: Sequence[Mapping[str, Any]]) -> int:
    """Return how many leading messages are the system prompt plus the task statement."""
    head = 1 if messages and messages[0]["role"] == "system" else 0
    return min(head + 1, len(messages))


def _exchange_starts(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """Return where each exchange after the head starts: at each assistant message.

    An exchange is a reply and what answers it: one user message in a text
    dialogue, one tool message per call in a tool-native one.
    """
    head = _head_length(messages)
    return [i for i in range(head, len(messages)) if messages[i]["role"] == "assistant"]


def count_exchanges(messages: Sequence[Mapping[str, Any]]) -> int:
    """Return how many whole exchanges lie between the head and the latest exchange."""
    return max(len(_exchange_starts(messages)) - 1, 0)


def drop_exchanges(messages: list, count: int) -> list:
    """Return ``messages`` without the ``count`` oldest exchanges (head and tail kept)."""
    starts = _exchange_starts(messages)
    count = min(count, max(len(starts) - 1, 0))
    if not count:
        return list(messages)
    return messages[: _head_length(messages)] + messages[starts[count] :]


def drop_oldest_exchanges(messages: list, fits: Callable[[list], bool]) -> list:
    """Return ``messages`` without as few of the oldest exchanges as make them fit.

    The head (the system prompt, if any, and the first user message, which
    holds the task statement) and the latest exchange (the last action and the
    observation that answered it) are always kept; what lies between is
    dropped oldest first, a whole exchange (an assistant reply and the user
    message after it) at a time, so the roles keep alternating.  The
    cut is found by bisection, so ``fits`` (which usually tokenizes) runs
    O(log n) times.  If even the shortest candidate does not fit, it is
    returned and the caller decides what to do.
    """
    if fits(messages):
        return messages
    low, high = 1, count_exchanges(messages)  # the answer lies in [low, high]
    while low < high:
        mid = (low + high) // 2
        if fits(drop_exchanges(messages, mid)):
            high = mid
        else:
            low = mid + 1
    return drop_exchanges(messages, high)


def merge_system_into_user(messages: list) -> list:
    """Fold a leading system message into the first user message.

    Some chat templates refuse the system role; this keeps its text.
    """
    if not messages or messages[0]["role"] != "system":
        return messages
    system, rest = messages[0]["content"], [dict(m) for m in messages[1:]]
    if rest and rest[0]["role"] == "user":
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
        return rest
    return [{"role": "user", "content": system}, *rest]


def plain_prompt(messages: Sequence[Mapping[str, str]]) -> str:
    """Render messages in the plain format used when a tokenizer has no chat template.

    Each message becomes ``"<Role>: <content>"`` (``System``, ``User``,
    ``Assistant``), messages are separated by a blank line, and the prompt ends
    with ``"Assistant:"`` for the model to continue::

        System: You are an agent ...

        User: I am thinking of an integer between 1 and 100. ...

        Assistant:
    """
    parts = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    parts.append("Assistant:")
    return "\n\n".join(parts)


def turn_of(info: Mapping[str, Any]) -> int:
    """Return the turn number for seeding: ``info["turn"]`` or the assistant messages so far."""
    turn = info.get(TURN)
    if isinstance(turn, (int, np.integer)) and not isinstance(turn, bool):
        return int(turn)
    messages = info.get(MESSAGES) or ()
    return sum(1 for message in messages if message.get("role") == "assistant")
