"""Prompt building and action parsing shared by the LLM agents, in one namespace.

The code lives in three modules, one per concern:

- :mod:`baselines.llm.replies`: the reply grammar (the reply formats and
  their system prompts, :func:`parse_action`, :class:`ReplyStop`);
- :mod:`baselines.llm.messages`: the chat messages of one turn
  (:func:`build_messages`, trimming old exchanges, :func:`turn_of`);
- :mod:`baselines.llm.prompt_encoder`: :class:`PromptEncoder`, the one
  builder of prompt token ids for acting and for training;

and the sampling checks with :mod:`baselines.llm.policy`.  Every name stays
importable from here.  This module imports neither torch nor transformers.
"""

from __future__ import annotations

from baselines.llm.messages import (
    build_messages,
    count_exchanges,
    drop_exchanges,
    drop_oldest_exchanges,
    insert_examples,
    merge_system_into_user,
    plain_prompt,
    turn_of,
)
from baselines.llm.policy import check_sampling
from baselines.llm.prompt_encoder import PromptEncoder, PromptTooLongError
from baselines.llm.replies import (
    ACTION_REPLY_TOKENS,
    ACTION_SYSTEM_PROMPT,
    DEFAULT_SYSTEM_PROMPT,
    FORMAT_PROMPT,
    REPLY_FORMAT,
    REPLY_FORMATS,
    SYSTEM_PROMPTS,
    ReplyStop,
    check_reply_format,
    choose_reply_format,
    cut_reply,
    format_action,
    format_reply,
    parse_action,
    reply_complete,
    reply_with_end,
    system_prompt_for,
    to_agent_action,
)

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
