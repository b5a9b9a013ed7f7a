"""Tool mode for a local model: the chat template renders the tool, the reply's calls are read back.

``HFAgent(tool_calls=True)`` prompts with the tool-native dialogue of
:mod:`baselines.llm.prompting.tool_messages`, rendered by the tokenizer's chat template
with ``tools=[act]`` (:class:`ToolPromptEncoder`), and reads the calls out of
the generated text (:func:`message_from_text`).  Only a template that renders
the tools it is given can do this; :func:`check_tool_template` refuses any
other in one line.  SmolLM2-135M-Instruct's template is one that cannot: it
writes each message's role and content and ignores ``tools``.

Call formats read: Hermes and Qwen's ``<tool_call>{"name": ..., "arguments":
...}</tool_call>`` blocks, and, in a reply without such blocks, bare JSON
objects (or lists of them) with a ``name`` and ``arguments`` or
``parameters`` (Llama 3.1's and Mistral's).

This module imports neither torch nor transformers.

>>> message_from_text('Go.<tool_call>{"name": "act", "arguments": {"action": "up"}}</tool_call>')
{'role': 'assistant', 'content': 'Go.', 'tool_calls': [{'type': 'function', \
'function': {'name': 'act', 'arguments': '{"action": "up"}'}}]}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from baselines.llm.prompting.prompt_encoder import PromptEncoder
from baselines.llm.prompting.tool_calls import TOOL_NAME, action_tool
from baselines.llm.prompting.tool_messages import tool_dialogue
from wrappers.errors import InvalidValue

__all__ = ["ToolPromptEncoder", "check_tool_template", "message_from_text"]

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def check_tool_template(tokenizer: Any) -> None:
    """Refuse (one line, :class:`InvalidValue`) a tokenizer whose chat template ignores tools."""
    probe = [{"role": "user", "content": "Play."}]
    tool = action_tool({})
    try:
        text = tokenizer.apply_chat_template(
            probe, tools=[tool], tokenize=False, add_generation_prompt=True
        )
    except Exception as error:  # no template, or one that fails on tools
        text = f"{type(error).__name__}"
    if tool["function"]["description"] not in text:
        raise InvalidValue(
            "tool_calls=True needs a chat template that renders the tools it is given, and "
            "this tokenizer's does not (SmolLM2-135M-Instruct's is one such): pass "
            "tool_calls=False, or give the tokenizer a tool-capable chat_template."
        )


class ToolPromptEncoder(PromptEncoder):
    """A :class:`PromptEncoder` for tool mode: the tool-native dialogue, rendered with ``tools``.

    The tool's schema holds this turn's admissible actions, so each turn's
    messages set the ``tools`` the template renders.  Examples (tool-call
    turns, :func:`~baselines.llm.prompting.tool_messages.example_turns`) follow the
    system prompt as in text mode.
    """

    def messages(self, observation: str, info: Mapping[str, Any]) -> list:
        """Return the turn's tool-native messages; remember its tool for rendering."""
        self.template_kwargs = {"tools": [action_tool(info)]}
        return tool_dialogue(observation, info, self.system_prompt)


def message_from_text(text: str) -> dict[str, Any]:
    """Return a generated reply as an assistant message: its text, and the calls it writes.

    A call whose JSON does not parse is kept with its text as ``arguments``,
    so that :func:`~baselines.llm.prompting.tool_messages.record_reply` records it as
    malformed.
    """
    blocks = _BLOCK.findall(text)
    if blocks:
        content = _BLOCK.sub("", text)
        found = [_json_or_text(block.strip()) for block in blocks]
    else:
        content, found = _bare_json(text)
    calls = []
    for item in found:
        for entry in item if isinstance(item, list) else [item]:
            calls.append(_call(entry))
    message: dict[str, Any] = {"role": "assistant", "content": content.strip() or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _bare_json(text: str) -> tuple[str, list[Any]]:
    """Return the text without its JSON calls, and the calls (objects with a name)."""
    decoder, found, kept, index = json.JSONDecoder(), [], [], 0
    while index < len(text):
        if text[index] in "{[":
            try:
                value, end = decoder.raw_decode(text, index)
            except ValueError:
                value, end = None, index
            entries = value if isinstance(value, list) else [value]
            if end > index and entries and all(_is_call(e) for e in entries):
                found.append(value)
                index = end
                continue
        kept.append(text[index])
        index += 1
    return "".join(kept), found


def _is_call(entry: Any) -> bool:
    return isinstance(entry, Mapping) and isinstance(entry.get("name"), str)


def _call(entry: Any) -> dict[str, Any]:
    """Return one call in OpenAI's shape: its arguments as a JSON string."""
    if not _is_call(entry):  # a block whose JSON did not parse: kept as text
        return {"type": "function", "function": {"name": TOOL_NAME, "arguments": str(entry)}}
    arguments = entry.get("arguments", entry.get("parameters", {}))
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function", "function": {"name": entry["name"], "arguments": text}}
