"""The reply grammar: how an LLM's reply states its action, and how it is read back.

Two reply formats (:data:`REPLY_FORMATS`), each with the system prompt that
asks for it: ``"think"`` (free text ending in an ``Action: ...`` line) and
``"action"`` (the bare action on the first line).  :func:`parse_action` reads
the action out of a reply, :func:`reply_complete` and :class:`ReplyStop` tell
when a reply being decoded holds its whole action line, and :func:`cut_reply`
finds where a reply ended inside a batch's tokens.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from agent_envs.protocol import AgentAction

__all__ = [
    "ACTION_REPLY_TOKENS",
    "ACTION_SYSTEM_PROMPT",
    "DEFAULT_SYSTEM_PROMPT",
    "FORMAT_PROMPT",
    "REPLY_FORMAT",
    "REPLY_FORMATS",
    "SYSTEM_PROMPTS",
    "ReplyStop",
    "check_reply_format",
    "choose_reply_format",
    "cut_reply",
    "format_action",
    "format_reply",
    "parse_action",
    "reply_complete",
    "reply_with_end",
    "system_prompt_for",
    "to_agent_action",
    "with_tokens",
]

#: How a reply states its action: the format :func:`parse_action` reads first, which
#: the default system prompt asks for and the supervised warm start demonstrates.
REPLY_FORMAT = "Action: {action}"

#: The default system prompt: it asks for the output format the parser reads first.
DEFAULT_SYSTEM_PROMPT = (
    "You are an agent in a text-based environment. Each message from the user is "
    "what you observe. Think briefly if you need to, then end your reply with one "
    f"line of the form '{REPLY_FORMAT.format(action='<your action>')}', using the action "
    "format the task describes."
)

#: The system prompt of the bare-action format: the one that, with a worked
#: example, made SmolLM2-135M-Instruct answer valid moves (docs/real_llm.md).
ACTION_SYSTEM_PROMPT = "You play a game. Reply with the action only, nothing else."

#: Reply formats and the system prompt each asks with.  ``"think"``: free text
#: that ends with an ``Action: ...`` line; ``"action"``: the bare action on the
#: first line.  Decoding stops once the reply is complete (:func:`reply_complete`).
SYSTEM_PROMPTS = {"think": DEFAULT_SYSTEM_PROMPT, "action": ACTION_SYSTEM_PROMPT}

REPLY_FORMATS = tuple(SYSTEM_PROMPTS)

#: Stands for "the system prompt of the reply format" where an agent takes one.
FORMAT_PROMPT = "format-default"

# "Action: up", "**Action:** up", "> action : up" ... at the start of a line.
_ACTION_LINE = re.compile(r"^[\s>*_#`-]*action[\s*_]*:[\s*_]*(.*?)[\s*_]*$", re.IGNORECASE)
_BOXED = "\\boxed{"


def parse_action(generation: str) -> str:
    """Return the action a model meant, read out of its generation.

    The rules, in order:

    1. The last line that starts with ``Action:`` (any case; markdown bold,
       quote or bullet marks around it are ignored): the rest of that line.
       If that rest is empty, the next non-empty line is the action.
    2. Else the content of the last ``\\boxed{...}`` (nested braces allowed).
    3. Else the first non-empty line, stripped.

    A generation with no non-empty line (empty or blank) comes back unchanged,
    so the env answers it as an invalid action.  The env's own parsing is
    lenient about case, whitespace, quotes and a leading ``Action:``, so the
    parser does not normalise further.

    >>> parse_action("I should go left.\\nAction: left")
    'left'
    >>> parse_action("Left is a wall.\\n**Action:** push up")
    'push up'
    >>> parse_action("Action: left\\nNo, better:\\nAction: right")
    'right'
    >>> parse_action("The secret is \\\\boxed{42}.")
    '42'
    >>> parse_action("  guess 50\\nbecause it halves the range")
    'guess 50'
    """
    lines = generation.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        match = _ACTION_LINE.match(lines[index])
        if match is None:
            continue
        if match.group(1).strip():
            return match.group(1).strip()
        following = [line.strip() for line in lines[index + 1 :] if line.strip()]
        if following:
            return following[0]
    boxed = _last_boxed(generation)
    if boxed is not None and boxed.strip():
        return boxed.strip()
    for line in lines:
        if line.strip():
            return line.strip()
    return generation


def _last_boxed(text: str) -> str | None:
    """Return the content of the last balanced ``\\boxed{...}``, or ``None``."""
    start = text.rfind(_BOXED)
    while start != -1:
        depth, position = 1, start + len(_BOXED)
        while position < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[position], 0)
            position += 1
        if depth == 0:
            return text[start + len(_BOXED) : position - 1]
        # Unbalanced (cut off by the token limit): try an earlier one.
        start = text.rfind(_BOXED, 0, start)
    return None


def to_agent_action(generation: str) -> AgentAction:
    """Parse ``generation`` and keep it as the action's ``raw`` text for the transcript."""
    return AgentAction(parse_action(generation), raw=generation)


def with_tokens(action: AgentAction, read: int | None, generated: int | None) -> AgentAction:
    """Return ``action`` carrying what its reply cost: prompt and reply tokens.

    >>> with_tokens(to_agent_action("Action: up"), 120, 4).tokens_read
    120
    """
    return AgentAction(action, action.raw, read, generated)


def format_reply(action: str) -> str:
    """Return ``action`` written as a reply in :data:`REPLY_FORMAT`, which parses back to it.

    >>> format_reply("push up")
    'Action: push up'
    >>> parse_action(format_reply("push up"))
    'push up'
    """
    return REPLY_FORMAT.format(action=action)


def check_reply_format(reply_format: str) -> str:
    """Return ``reply_format`` if it is one of :data:`REPLY_FORMATS`, else raise ``ValueError``."""
    if reply_format not in REPLY_FORMATS:
        raise ValueError(f"reply_format must be one of {REPLY_FORMATS}, got {reply_format!r}.")
    return reply_format


def choose_reply_format(reply_format: str | None, few_shot: int) -> str:
    """Return the reply format an agent uses: ``reply_format``, or the default for ``few_shot``.

    The default is ``"action"`` with examples: they, and the history that
    ``ChatHistory`` records by default, show bare actions, so the model is
    asked for exactly what it sees.  Without examples it is ``"think"``, the
    format models are trained on here (the warm start and GRPO).

    >>> choose_reply_format(None, 1), choose_reply_format(None, 0), choose_reply_format("think", 2)
    ('action', 'think', 'think')
    """
    if reply_format is None:
        return "action" if few_shot else "think"
    return check_reply_format(reply_format)


def system_prompt_for(system_prompt: str | None, reply_format: str) -> str | None:
    """Return the system prompt to use: the format's own for :data:`FORMAT_PROMPT`."""
    if system_prompt == FORMAT_PROMPT:
        return SYSTEM_PROMPTS[reply_format]
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise TypeError(f"system_prompt must be a str or None, got {system_prompt!r}.")
    return system_prompt


def format_action(action: str, reply_format: str) -> str:
    """Return ``action`` written as a reply in ``reply_format`` (what an example shows).

    >>> format_action("up", "action"), format_action("up", "think")
    ('up', 'Action: up')
    """
    return action if check_reply_format(reply_format) == "action" else format_reply(action)


def reply_complete(text: str, reply_format: str) -> bool:
    """Return whether a reply being decoded already holds its whole action line.

    ``"action"``: a non-blank first line has ended (a newline follows it).
    ``"think"``: an ``Action: ...`` line with its action has ended.  Decoding
    stops there, so no reply rambles on to ``max_new_tokens``; what
    :func:`parse_action` reads from the reply is the same as if it had gone on
    to the end-of-sequence token, unless the model would later have written
    another ``Action:`` line.

    >>> reply_complete("49", "action"), reply_complete("49\\n", "action")
    (False, True)
    >>> reply_complete("I go up.\\n", "think"), reply_complete("Action: up\\n", "think")
    (False, True)
    """
    finished = text.split("\n")[:-1]  # the lines a newline has ended
    if reply_format == "action":
        return any(line.strip() for line in finished)
    for index, line in enumerate(finished):
        match = _ACTION_LINE.match(line)
        if match is not None and (
            match.group(1).strip() or any(rest.strip() for rest in finished[index + 1 :])
        ):
            return True
    return False


#: The most tokens of a bare-action reply (``reply_format="action"``).  The longest
#: action of any registered env's oracle episodes, newline included, is 14 tokens
#: with SmolLM2's tokenizer (``click[B0T6Z7W66J]`` in WebShop); 32 leaves room for
#: longer search queries and item names.  A first line that runs on past it is
#: rambling, not an action: decoding it to ``max_new_tokens`` (256 by default)
#: would hold up its whole batch.
ACTION_REPLY_TOKENS = 32


class ReplyStop:
    """Tell, token by token, when a reply holds its whole action line (:func:`reply_complete`).

    Called with a reply's tokens so far after each decoded token.  The text
    is decoded only when the last token holds a newline, so the check costs
    a set lookup on most steps.  A bare-action reply also stops at
    ``max_tokens`` tokens.

    Args:
        tokenizer: the model's tokenizer (``decode`` and ``len``).
        reply_format: one of :data:`REPLY_FORMATS`.
        max_tokens: the cap; by default :data:`ACTION_REPLY_TOKENS` for
            ``"action"`` and none for ``"think"``.
    """

    def __init__(self, tokenizer: Any, reply_format: str, max_tokens: int | None = None) -> None:
        self.tokenizer = tokenizer
        self.reply_format = check_reply_format(reply_format)
        if max_tokens is None and reply_format == "action":
            max_tokens = ACTION_REPLY_TOKENS
        self.max_tokens = max_tokens
        pieces = tokenizer.batch_decode([[token] for token in range(len(tokenizer))])
        self.newline_ids = frozenset(i for i, piece in enumerate(pieces) if "\n" in piece)

    def __call__(self, tokens: Sequence[int]) -> bool:
        if self.max_tokens is not None and len(tokens) >= self.max_tokens:
            return True
        if not tokens or tokens[-1] not in self.newline_ids:
            return False
        text = self.tokenizer.decode(list(tokens), skip_special_tokens=True)
        return reply_complete(text, self.reply_format)


def cut_reply(
    tokens: Sequence[int],
    eos_ids: Sequence[int],
    stop: Callable[[list[int]], bool] | None = None,
) -> list[int]:
    """Return a reply's tokens up to its first end token (dropped) or stopping token (kept).

    A batch decodes on after a row has ended; this finds where the row ended.
    """
    eos = frozenset(eos_ids)
    for index, token in enumerate(tokens):
        if token in eos:
            return list(tokens[:index])
        if stop is not None and stop(list(tokens[: index + 1])):
            return list(tokens[: index + 1])
    return list(tokens)


def reply_with_end(
    tokens: Sequence[int],
    eos_ids: Sequence[int],
    stop: Callable[[list[int]], bool] | None = None,
) -> tuple[list[int], list[int]]:
    """Return ``(reply, kept)``: :func:`cut_reply`, and the tokens a token history keeps.

    ``kept`` is the reply plus its end token when the reply ended with one (the
    chat template's close follows that token), else the reply itself.
    """
    reply = cut_reply(tokens, eos_ids, stop)
    ended = len(reply) < len(tokens) and tokens[len(reply)] in eos_ids
    return reply, list(tokens[: len(reply) + 1]) if ended else reply
