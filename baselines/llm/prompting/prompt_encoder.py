"""PromptEncoder: the one builder of the prompt token ids a model sees, to act and to train.

It needs only a tokenizer (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from baselines.llm.prompting.messages import (
    build_messages,
    drop_oldest_exchanges,
    insert_examples,
    merge_system_into_user,
    plain_prompt,
)

__all__ = ["PromptEncoder", "PromptTooLongError"]


class PromptTooLongError(ValueError):
    """The system prompt, task statement and latest exchange alone exceed the context."""


class PromptEncoder:
    """Turn one turn's observation and info into the prompt token ids a model sees.

    This is the one place where a prompt is built: :class:`~baselines.llm.agents.hf_agent.HFAgent`
    uses it to act, and the GRPO rollout (:mod:`baselines.llm.training.rollout`) uses it
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
            :func:`baselines.llm.prompting.few_shot.example_messages`); always kept
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
        #: More keywords for ``apply_chat_template`` (tool mode's ``tools``).
        self.template_kwargs: dict[str, Any] = {}

    @property
    def budget(self) -> int | None:
        """The most prompt tokens that leave room for ``max_new_tokens``."""
        return None if self.max_context is None else self.max_context - self.max_new_tokens

    def fits(self, ids: Sequence[int]) -> bool:
        """Return whether a prompt of ``ids`` leaves room for the generation."""
        return self.budget is None or len(ids) <= self.budget

    def messages(self, observation: str, info: Mapping[str, Any]) -> list:
        """Return the turn's chat messages.

        See :func:`~baselines.llm.prompting.messages.build_messages`.
        """
        return build_messages(observation, info, self.system_prompt)

    def full_ids(self, observation: str, info: Mapping[str, Any]) -> list[int]:
        """Return the prompt's token ids with the whole history (no trimming)."""
        return self.encode(self.messages(observation, info))

    def prompt_ids(self, observation: str, info: Mapping[str, Any]) -> list[int]:
        """Return the prompt's token ids, the oldest exchanges dropped if it does not fit.

        Equal to :meth:`full_ids` whenever that fits.
        """
        messages = self.messages(observation, info)
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
                messages, tokenize=False, add_generation_prompt=True, **self.template_kwargs
            )
        except Exception:
            # Some templates (Gemma, Mistral v1) refuse the system role; fold it
            # into the first user message and remember that for later turns.
            if not self._system_role or messages[0]["role"] != "system":
                raise
            self._system_role = False
            return self._render(messages)
