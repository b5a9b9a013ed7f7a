"""The env's action as a function a chat model calls: the tool's schema, and the move read back.

Servers that speak OpenAI's chat API (vLLM, SGLang, llama.cpp's server with a
function-calling chat format) take ``tools`` and answer with
``message.tool_calls``.  :func:`action_tool` describes the one tool, ``act``,
with a JSON schema whose ``action`` is an enum of the admissible actions
where they are few; :func:`action_from_message` reads the move from the
reply.  A reply without a well-formed call of ``act`` is no action at all: an
empty one, which the env answers as invalid and the evaluator counts as
unparsable.

>>> tool = action_tool({"admissible_actions": ["up", "down"]})
>>> tool["function"]["parameters"]["properties"]["action"]["enum"]
['up', 'down']
>>> call = {"function": {"name": "act", "arguments": '{"action": "up"}'}}
>>> action_from_message({"content": None, "tool_calls": [call]})
'up'
>>> action_from_message({"content": "Action: up"})
''
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_envs.protocol import AgentAction
from wrappers.protocol import ADMISSIBLE_ACTIONS

__all__ = ["MAX_ENUM", "TOOL_NAME", "action_from_message", "action_tool"]

#: The tool's name.
TOOL_NAME = "act"
#: The most admissible actions listed as an enum; beyond it the action is free text.
MAX_ENUM = 32


def action_tool(info: Mapping[str, Any]) -> dict[str, Any]:
    """Return the OpenAI ``tools`` entry of the env's action for this turn.

    The admissible actions (``info["admissible_actions"]``) become the
    ``action`` parameter's ``enum`` when there are 1 to :data:`MAX_ENUM` of
    them; otherwise the action is any string, written as the game asks.
    """
    action: dict[str, Any] = {
        "type": "string",
        "description": "The action, written exactly as the game's instructions ask.",
    }
    admissible = info.get(ADMISSIBLE_ACTIONS)
    if admissible and len(admissible) <= MAX_ENUM:
        action["enum"] = [str(choice) for choice in admissible]
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Play one turn of the game: send one action to the environment.",
            "parameters": {
                "type": "object",
                "properties": {"action": action},
                "required": ["action"],
            },
        },
    }


def action_from_message(message: Any) -> AgentAction:
    """Return the action of the reply's first call of ``act``, or ``""`` if it has none.

    The raw text kept for transcripts is the call as JSON, else the reply's
    content.  Arguments that are not a JSON object with a string ``action``
    count as no call.
    """
    content = message.get("content") if isinstance(message, Mapping) else None
    raw = content if isinstance(content, str) else ""
    calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or function.get("name") != TOOL_NAME:
            continue
        arguments = function.get("arguments")
        try:
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            arguments = None
        action = arguments.get("action") if isinstance(arguments, Mapping) else None
        shown = json.dumps({"name": TOOL_NAME, "arguments": arguments}, default=str)
        if isinstance(action, str):
            return AgentAction(action, raw=shown)
        raw = shown
    return AgentAction("", raw=raw)
