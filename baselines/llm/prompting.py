"""Prompt building and action parsing shared by the LLM agents.

:class:`~baselines.llm.hf_agent.HFAgent` and
:class:`~baselines.llm.openai_agent.OpenAIChatAgent` differ only in where the
generation comes from.  Everything else lives here, once: how a prompt is
assembled from ``info["messages"]`` (or the bare observation), how old
exchanges are dropped when a prompt is too long, how an action is read out of
a generation, and the turn a sampling seed is keyed on (the seed itself is
:func:`wrappers.seeding.sampling_seed`).

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from agent_envs.protocol import MESSAGES, TURN, AgentAction
from wrappers.validators import check_int, check_number

__all__ = [
    "ACTION_REPLY_TOKENS",
    "ACTION_SYSTEM_PROMPT",
    "DEFAULT_SYSTEM_PROMPT",
    "FORMAT_PROMPT",
    "REPLY_FORMAT",
    "REPLY_FORMATS",
    "SYSTEM_PROMPTS",
    "PromptEncoder",
    "PromptTooLongError",
    "ReplyStop",
    "build_messages",
    "check_reply_format",
    "check_sampling",
    "choose_reply_format",
    "count_exchanges",
    "cut_reply",
    "drop_exchanges",
    "drop_oldest_exchanges",
    "format_action",
    "format_reply",
    "insert_examples",
    "merge_system_into_user",
    "parse_action",
    "plain_prompt",
    "reply_complete",
    "reply_with_end",
    "system_prompt_for",
    "to_agent_action",
    "turn_of",
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
#: rambling, not an action, and used to keep its whole batch decoding to
#: ``max_new_tokens`` (256 by default).
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


def insert_examples(messages: list, examples: Sequence[Mapping[str, str]]) -> list:
    """Return ``messages`` with ``examples`` (earlier chat turns) after any system message."""
    if not examples:
        return messages
    head = 1 if messages and messages[0]["role"] == "system" else 0
    return [*messages[:head], *(dict(m) for m in examples), *messages[head:]]


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


def _head_length(messages: Sequence[Mapping[str, str]]) -> int:
    """Return how many leading messages are the system prompt plus the task statement."""
    head = 1 if messages and messages[0]["role"] == "system" else 0
    return min(head + 1, len(messages))


def count_exchanges(messages: Sequence[Mapping[str, str]]) -> int:
    """Return how many whole exchanges lie between the head and the last message."""
    return max((len(messages) - _head_length(messages) - 1) // 2, 0)


def drop_exchanges(messages: list, count: int) -> list:
    """Return ``messages`` without the ``count`` oldest exchanges (head and tail kept)."""
    head = _head_length(messages)
    count = min(count, count_exchanges(messages))
    return messages[:head] + messages[head + 2 * count :]


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


class PromptTooLongError(ValueError):
    """The system prompt, task statement and latest exchange alone exceed the context."""


class PromptEncoder:
    """Turn one turn's observation and info into the prompt token ids a model sees.

    This is the one place where a prompt is built: :class:`~baselines.llm.hf_agent.HFAgent`
    uses it to act, and the GRPO rollout (:mod:`baselines.llm.rollout`) uses it
    to train, so a trained model is evaluated on exactly the prompts it was
    trained on.  It needs only a tokenizer (no torch).

    Args:
        tokenizer: a Hugging Face tokenizer; its chat template is used when it
            has one, else :func:`plain_prompt`.
        system_prompt: put first in every prompt (``None`` for none).
        max_context: the model's context length in tokens (``None``: unknown).
        max_new_tokens: the room kept for the generation.
        examples: chat turns put after the system prompt and before the
            episode's dialogue (few-shot examples,
            :func:`baselines.llm.few_shot.example_messages`); always kept
            whole when a long dialogue is trimmed.
    """

    def __init__(
        self,
        tokenizer: Any,
        system_prompt: str | None,
        max_context: int | None,
        max_new_tokens: int,
        examples: Sequence[Mapping[str, str]] = (),
    ) -> None:
        self.tokenizer = tokenizer
        self.system_prompt = system_prompt
        self.max_context = max_context
        self.max_new_tokens = max_new_tokens
        self.examples = [dict(m) for m in examples]
        self._system_role = True  # becomes False if the chat template refuses it

    @property
    def budget(self) -> int | None:
        """The most prompt tokens that leave room for ``max_new_tokens``."""
        return None if self.max_context is None else self.max_context - self.max_new_tokens

    def fits(self, ids: Sequence[int]) -> bool:
        """Return whether a prompt of ``ids`` leaves room for the generation."""
        return self.budget is None or len(ids) <= self.budget

    def full_ids(self, observation: str, info: Mapping[str, Any]) -> list[int]:
        """Return the prompt's token ids with the whole history (no trimming)."""
        return self.encode(build_messages(observation, info, self.system_prompt))

    def prompt_ids(self, observation: str, info: Mapping[str, Any]) -> list[int]:
        """Return the prompt's token ids, the oldest exchanges dropped if it does not fit.

        Equal to :meth:`full_ids` whenever that fits.
        """
        messages = build_messages(observation, info, self.system_prompt)
        cache: dict[int, list[int]] = {}

        def ids(candidate: list) -> list[int]:
            # Candidates differ only in how many exchanges were dropped, so the
            # length identifies them.
            if len(candidate) not in cache:
                cache[len(candidate)] = self.encode(candidate)
            return cache[len(candidate)]

        budget = self.budget
        if budget is None:
            return ids(messages)
        kept = drop_oldest_exchanges(messages, lambda candidate: len(ids(candidate)) <= budget)
        if len(ids(kept)) > budget:
            raise PromptTooLongError(
                f"The prompt needs {len(ids(kept))} tokens even with the history dropped "
                f"(system prompt, task statement and latest exchange), but the context "
                f"of {self.max_context} tokens leaves {budget} after max_new_tokens="
                f"{self.max_new_tokens}. Lower max_new_tokens or shorten the system prompt."
            )
        return ids(kept)

    def encode(self, messages: list) -> list[int]:
        """Render ``messages`` after the examples (chat template, or plain format); tokenize."""
        text = self.render(messages)
        if getattr(self.tokenizer, "chat_template", None) is None:
            return list(self.tokenizer(text)["input_ids"])
        # The template already holds the special tokens (BOS and role markers).
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def render(self, messages: list) -> str:
        """Return the prompt text of ``messages`` after the examples, up to the reply's start."""
        return self._render(insert_examples(messages, self.examples))

    def _render(self, messages: list) -> str:
        tokenizer = self.tokenizer
        if getattr(tokenizer, "chat_template", None) is None:
            return plain_prompt(messages)
        if not self._system_role:
            messages = merge_system_into_user(messages)
        try:
            return tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        except Exception:
            # Some templates (Gemma, Mistral v1) refuse the system role; fold it
            # into the first user message and remember that for later turns.
            if not self._system_role or messages[0]["role"] != "system":
                raise
            self._system_role = False
            return self._render(messages)


def turn_of(info: Mapping[str, Any]) -> int:
    """Return the turn number for seeding: ``info["turn"]`` or the assistant messages so far."""
    turn = info.get(TURN)
    if isinstance(turn, (int, np.integer)) and not isinstance(turn, bool):
        return int(turn)
    messages = info.get(MESSAGES) or ()
    return sum(1 for message in messages if message.get("role") == "assistant")


def check_sampling(temperature: float, top_p: float, max_new_tokens: int, name: str) -> None:
    """Raise a clear error for out-of-range sampling arguments."""
    check_number(temperature, "temperature (0 means greedy)", 0.0)
    check_number(top_p, "top_p", 0.0, 1.0, open_low=True)
    check_int(max_new_tokens, name, 1)
