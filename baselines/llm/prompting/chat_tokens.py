"""Token-in-token-out dialogues: the tokens a model sampled are never re-tokenised.

Rebuilding a multi-turn prompt from text every turn (render the dialogue with
the chat template, tokenise it) does not in general extend the tokens the
model sampled: a reply may be sampled as a non-canonical split (``"Act" +
"ion"`` where the tokenizer writes ``"Action"``), a special token may sit
inside it, and the template adds text after the model's end token.  So the
dialogue is built the other way here.  The first prompt is the rendered task;
after each reply the sampled tokens stay as they are, and only the template's
*delta* for the env's answer is appended, tokenised once:

1. the end of the assistant turn that the template writes after the reply's
   content (for ChatML ``<|im_end|>\\n``; when the reply already ends with
   that end token, as a reply that stopped does, only the rest, ``\\n``);
2. the user message holding the env's answer;
3. the start of the next assistant turn (the generation prompt).

The delta is read off one rendering of the dialogue in which the reply's
content is a sentinel: whatever the template writes after the sentinel is the
delta.  Where the template is prefix-stable (rendering the longer dialogue
extends the shorter one's text, as ChatML, Llama 3 and the plain format do)
that is exactly the difference of the two renderings.  Where it is not (a
template that rewrites earlier turns, for instance one that strips reasoning
from past replies), the sequence keeps what the model saw when it replied and
appends the delta, so it differs from a fresh rendering of the whole dialogue,
on purpose: the model is trained and evaluated on what it actually read.

:class:`ChatTokens` computes deltas; the GRPO rollout
(:mod:`baselines.llm.training.rollout`) appends them to each episode's sequence.
:class:`TokenHistory` keeps one sequence per episode for an agent that acts
turn by turn (:class:`~baselines.llm.agents.hf_agent.HFAgent`), so that evaluation
reads exactly the tokens training read.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from baselines.llm.prompting.messages import build_messages
from baselines.llm.prompting.prompt_encoder import PromptEncoder

__all__ = ["ChatTokens", "TokenHistory"]

# Stands in for the reply's content while the template renders the delta.
# No whitespace at its ends, so templates that trim the content keep it whole.
_SENTINEL = "[[agent-envs:reply-5f1c]]"


class ChatTokens:
    """The first prompt of a dialogue, and the tokens the env's answers add to it.

    Args:
        encoder: the :class:`~baselines.llm.prompting.prompt_encoder.PromptEncoder` that builds
            the first prompt (and so the system prompt and chat template).
        eos_ids: the tokens that end a reply.
    """

    def __init__(self, encoder: PromptEncoder, eos_ids: Sequence[int]) -> None:
        self.encoder = encoder
        tokenizer = encoder.tokenizer
        # A reply that stopped ends with one of these; the template's close
        # starts with it, and the model's own token takes its place.
        self._eos_text = {int(i): tokenizer.decode([int(i)]) for i in eos_ids}

    def first(self, observation: str, info: Mapping[str, Any]) -> list[int]:
        """Return the first prompt's tokens: the dialogue so far, rendered and tokenised."""
        return self.encoder.full_ids(observation, info)

    def delta_text(
        self, reply_ids: Sequence[int], observation: str, info: Mapping[str, Any]
    ) -> str:
        """Return the text that follows the reply ``reply_ids`` up to the next reply's start.

        ``info["messages"]`` is the dialogue after the env answered the reply
        (``wrappers.ChatHistory``): it ends with the reply and the answer.
        """
        messages = build_messages(observation, info, self.encoder.system_prompt)
        if len(messages) < 2 or messages[-2]["role"] != "assistant":
            raise ValueError(
                "A token-level dialogue needs info['messages'] (wrappers.ChatHistory) ending "
                "with the assistant's reply and the env's answer."
            )
        messages[-2] = {"role": "assistant", "content": _SENTINEL}
        text = self.encoder.render(messages)
        if text.count(_SENTINEL) != 1:
            raise ValueError(
                "The chat template does not write an assistant reply verbatim, so the "
                "sampled tokens cannot be kept as they are."
            )
        delta = text[text.index(_SENTINEL) + len(_SENTINEL) :]
        if reply_ids:
            end = self._eos_text.get(int(reply_ids[-1]))
            if end and delta.startswith(end):
                delta = delta[len(end) :]
        return delta

    def delta(
        self, reply_ids: Sequence[int], observation: str, info: Mapping[str, Any]
    ) -> list[int]:
        """Return the delta's tokens (tokenised once, no special tokens added)."""
        text = self.delta_text(reply_ids, observation, info)
        return list(self.encoder.tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass
class _Turn:
    """One episode's last prompt: the dialogue it rendered, its tokens, and the reply."""

    messages: list[dict[str, str]]
    prompt: list[int]
    reply: list[int] | None = None
    text: str | None = None


class TokenHistory:
    """Per-episode token sequences for an agent: prompt, reply and delta, turn after turn.

    The prompt of a turn is the previous prompt, the reply's sampled tokens
    and the delta (:class:`ChatTokens`), exactly as the GRPO rollout builds
    it, whenever the dialogue in ``info["messages"]`` continues the previous
    turn's: two more messages, the first of them the reply's text as
    generated (``ChatHistory(record="raw")``).  Otherwise (the first turn, no
    ``ChatHistory``, ``record="action"``, a sliding ``window``) and whenever
    the token prompt would not leave room for the reply, the prompt is the
    rendered dialogue (:meth:`PromptEncoder.prompt_ids
    <baselines.llm.prompting.prompt_encoder.PromptEncoder.prompt_ids>`, which drops old
    exchanges to fit).
    """

    def __init__(self, chat: ChatTokens) -> None:
        self.chat = chat
        self._turns: dict[Hashable, _Turn] = {}

    def prompt_ids(self, key: Hashable, observation: str, info: Mapping[str, Any]) -> list[int]:
        """Return the prompt of episode ``key``'s turn (and remember it for the next)."""
        encoder = self.chat.encoder
        messages = build_messages(observation, info, encoder.system_prompt)
        last = self._turns.get(key)
        ids = None
        if last is not None and last.reply is not None and _continues(last, messages):
            ids = last.prompt + last.reply + self.chat.delta(last.reply, observation, info)
            if not encoder.fits(ids):
                ids = None
        if ids is None:
            ids = encoder.prompt_ids(observation, info)
        self._turns[key] = _Turn(messages, ids)
        return ids

    def record(self, key: Hashable, reply_ids: Sequence[int], text: str) -> None:
        """Remember episode ``key``'s reply: its tokens (end token included) and its text."""
        turn = self._turns.get(key)
        if turn is not None:
            turn.reply, turn.text = list(reply_ids), text

    def retain(self, keys: Sequence[Hashable]) -> None:
        """Forget every episode not in ``keys`` (episodes that have ended)."""
        wanted = set(keys)
        self._turns = {key: turn for key, turn in self._turns.items() if key in wanted}


def _continues(last: _Turn, messages: list[dict[str, str]]) -> bool:
    """Return whether ``messages`` is ``last``'s dialogue plus its reply and one answer.

    The last user message of ``last`` is not compared: wrappers outside
    ``ChatHistory`` may add to the current observation only (a visible turn
    budget), and the token sequence keeps what the model was shown.
    """
    before = last.messages
    return (
        len(messages) == len(before) + 2
        and messages[: len(before) - 1] == before[:-1]
        and messages[-2] == {"role": "assistant", "content": last.text}
    )
