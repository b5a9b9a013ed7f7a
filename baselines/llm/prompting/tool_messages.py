"""Tool-native episodes: the dialogue of a tool-calling agent, as the OpenAI convention has it.

In tool mode (``OpenAIChatAgent(tool_calls=True)``) a turn is not a line of
text but a call of the function ``act`` (:mod:`baselines.llm.prompting.tool_calls`), and
the dialogue sent back to the server follows the tool-calling protocol that
servers and chat templates check:

* the system prompt (:data:`TOOL_SYSTEM_PROMPT`) says to call ``act``, and asks
  for no text line;
* each past turn is the assistant message with the ``tool_calls`` the model
  made, then one ``role: "tool"`` message per call, linked by
  ``tool_call_id``: the env's answer for the call that was played, a short
  note (:data:`NOT_PLAYED`) for each other call, the env's answer last;
* a reply with no call stays a plain assistant text, and the env's answer
  follows as a ``user`` message.

The reply is recorded once, as the JSON of that assistant message
(:func:`record_reply`): it is the action's ``raw``, so the transcript shows
exactly what goes back to the server, and ``ChatHistory(record="raw")`` hands
it to the next turn, which reads it back (:func:`tool_dialogue`).  The record
also keeps what is never sent back: the reply's ``reasoning_content`` (and
similar fields, :data:`KEPT_FIELDS`), how many calls were not played
(``ignored_calls``) and the malformed calls as received (``unsent_calls``).
A call whose arguments are not a JSON object is not sent back: servers that
render calls through a chat template parse the arguments, and would refuse
the whole request.  With ``ChatHistory(record="action")`` only the actions are
known, and each turn is rebuilt as one call of ``act`` with a made-up id.

>>> raw = record_reply({"content": None, "tool_calls": [
...     {"id": "c1", "type": "function",
...      "function": {"name": "act", "arguments": '{"action": "up"}'}}]}, turn=0)
>>> raw == "up", json.loads(raw.raw)["tool_calls"][0]["function"]["arguments"]
(True, '{"action": "up"}')
>>> history = [{"role": "user", "content": "Start."}, {"role": "assistant", "content": raw.raw},
...            {"role": "user", "content": "You moved."}]
>>> [m["role"] for m in tool_dialogue("You moved.", {"messages": history}, None)]
['user', 'assistant', 'tool']
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_envs.protocol import AgentAction
from baselines.llm.prompting.replies import FORMAT_PROMPT
from baselines.llm.prompting.tool_calls import TOOL_NAME
from wrappers.protocol import MESSAGES

__all__ = [
    "EXAMPLE_END",
    "KEPT_FIELDS",
    "NOT_PLAYED",
    "TOOL_SYSTEM_PROMPT",
    "example_turns",
    "record_reply",
    "tool_dialogue",
    "tool_settings",
]

#: The default system prompt in tool mode: the game, and the call; no text line.
TOOL_SYSTEM_PROMPT = (
    f"You are an agent playing a text-based game. Each message you receive is what you "
    f"observe. To play a turn, call the function `{TOOL_NAME}` with your action, written "
    f"as the game describes; the game's answer comes back as the function's result. "
    f"Call `{TOOL_NAME}` once per turn."
)


def tool_settings(settings: Mapping[str, Any], tool_calls: bool) -> dict[str, Any]:
    """Return an agent's prompt settings, in tool mode with :data:`TOOL_SYSTEM_PROMPT`.

    The reply format's own system prompt (the default,
    :data:`~baselines.llm.prompting.replies.FORMAT_PROMPT`) asks for a text
    line; in tool mode the tool's prompt takes its place.  A prompt given
    explicitly is kept.
    """
    if tool_calls and settings.get("system_prompt", FORMAT_PROMPT) == FORMAT_PROMPT:
        return {**settings, "system_prompt": TOOL_SYSTEM_PROMPT}
    return dict(settings)


#: The tool answer of a call that was not played (only the first call of ``act`` is).
NOT_PLAYED = f"Not played: one action per turn, and only the first call of {TOOL_NAME} counts."

#: The tool answer of an example's last call: the oracle's episode ended there, solved.
EXAMPLE_END = "Solved. The episode is over."

#: Fields of a reply kept in the transcript and never sent back (a model's reasoning).
KEPT_FIELDS = ("reasoning_content", "reasoning", "thinking")


def record_reply(message: Any, turn: int) -> AgentAction:
    """Return the action a server's reply plays, its ``raw`` the reply's record as JSON.

    The action is that of the first call of ``act`` whose arguments hold a
    string ``action``, ``""`` if there is none (as
    :func:`~baselines.llm.prompting.tool_calls.action_from_message` reads it).  Calls
    without an ``id`` get ``call_<turn>_<index>``, so that the tool messages
    of the next turns can link to them.
    """
    message = message if isinstance(message, Mapping) else {}
    content = message.get("content")
    record: dict[str, Any] = {
        "role": "assistant",
        "content": content if isinstance(content, str) else None,
    }
    sent, unsent = _split_calls(message.get("tool_calls"), turn)
    if sent:
        record["tool_calls"] = sent
    elif record["content"] is None:
        record["content"] = ""  # a plain assistant message needs its text
    played = next((call for call in sent if _action_of(call) is not None), None)
    action = _action_of(played) if played else ""
    for field in KEPT_FIELDS:
        if message.get(field) is not None:
            record[field] = message[field]
    ignored = len(sent) + len(unsent) - (played is not None)
    if ignored:
        record["ignored_calls"] = ignored
    if unsent:
        record["unsent_calls"] = unsent
    return AgentAction(action, raw=json.dumps(record, default=str))


def _split_calls(calls: Any, turn: int) -> tuple[list[dict], list[Any]]:
    """Return the reply's calls as they are sent back, and the malformed ones as received."""
    sent, unsent = [], []
    for index, call in enumerate(calls if isinstance(calls, list) else []):
        function = call.get("function") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        try:
            well_formed = isinstance(name, str) and isinstance(json.loads(text), dict)
        except ValueError:
            well_formed = False
        if not well_formed:
            unsent.append(call)
            continue
        call_id = call.get("id")
        sent.append({
            "id": call_id if isinstance(call_id, str) and call_id else f"call_{turn}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": text},
        })  # fmt: skip
    return sent, unsent


def tool_dialogue(
    observation: str,
    info: Mapping[str, Any],
    system_prompt: str | None,
    examples: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Return the chat messages of one turn in tool mode.

    As :func:`~baselines.llm.prompting.messages.build_messages`: the dialogue comes from
    ``info["messages"]`` (``wrappers.ChatHistory``) or is ``observation``
    alone, the system prompt goes first unless the dialogue has its own, and
    the last message holds ``observation`` itself.  Each assistant turn is
    read back from its record (:func:`record_reply`) and answered by tool
    messages; ``examples`` (from :func:`example_turns`) follow the system
    prompt.
    """
    history = info.get(MESSAGES) or [{"role": "user", "content": observation}]
    messages: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None  # the assistant turn the env answers next
    for entry in history:
        role, content = str(entry["role"]), str(entry["content"])
        if role == "assistant":
            pending = _assistant_turn(content, len(messages))
            messages.append(_sent(pending))
        elif pending is not None and role == "user":
            messages.extend(_answers(pending, content))
            pending = None
        else:
            messages.append({"role": role, "content": content})
    if pending is not None:  # a dialogue that ends with a reply: the env's answer follows
        messages.extend(_answers(pending, observation))
    elif messages[-1]["role"] == "system":
        messages.append({"role": "user", "content": observation})
    messages[-1] = {**messages[-1], "content": observation}
    head = 1 if messages[0]["role"] == "system" else 0
    if system_prompt and not head:
        messages.insert(0, {"role": "system", "content": system_prompt})
        head = 1
    return [*messages[:head], *(dict(m) for m in examples), *messages[head:]]


def _assistant_turn(content: str, position: int) -> dict[str, Any]:
    """Return the record of one past reply: read back, or rebuilt from the action played."""
    try:
        record = json.loads(content)
    except ValueError:
        record = None
    if isinstance(record, dict) and record.get("role") == "assistant":
        # Normalized again: a dialogue may come from anywhere, not only record_reply.
        calls, _ = _split_calls(record.get("tool_calls"), position)
        return {**record, "tool_calls": calls}
    if not content:  # ChatHistory(record="action") after a reply with no call
        return {"role": "assistant", "content": ""}
    arguments = json.dumps({"action": content})
    call = {"id": f"call_{position}", "type": "function"}
    call["function"] = {"name": TOOL_NAME, "arguments": arguments}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _sent(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return the assistant message of a record as it goes to the server: no reasoning, no notes.

    A message with calls and no text has the empty string as ``content``: the
    OpenAI schema allows it, and llama-cpp-python's server refuses both a
    ``null`` content (its request schema) and none at all (its chat template
    reads ``message.content``).
    """
    content, calls = record.get("content"), record.get("tool_calls")
    message = {"role": "assistant", "content": content if isinstance(content, str) else ""}
    if calls:
        message["tool_calls"] = [dict(call) for call in calls]
    return message


def _answers(record: Mapping[str, Any], answer: str) -> list[dict[str, Any]]:
    """Return the messages that answer an assistant turn: tool messages, or a user one."""
    calls = record.get("tool_calls") or []
    if not calls:
        return [{"role": "user", "content": answer}]
    played = next((call["id"] for call in calls if _action_of(call) is not None), calls[0]["id"])
    notes = [
        {"role": "tool", "tool_call_id": call["id"], "content": NOT_PLAYED}
        for call in calls
        if call["id"] != played
    ]
    return [*notes, {"role": "tool", "tool_call_id": played, "content": answer}]


def _action_of(call: Mapping[str, Any]) -> str | None:
    """Return the action a well-formed call plays, or ``None`` if it is no call of ``act``."""
    function = call["function"]
    action = json.loads(function["arguments"]).get("action")
    return action if function["name"] == TOOL_NAME and isinstance(action, str) else None


def example_turns(episodes: Sequence[tuple[int, Sequence[tuple[str, str]]]]) -> list[dict]:
    """Return oracle episodes as tool-call turns.

    The episodes are :func:`~baselines.llm.prompting.few_shot.oracle_episodes`'s.

    Each observation answers the call before it (the first is a ``user``
    message), and each episode's last call is answered by :data:`EXAMPLE_END`,
    since the example stops at the move that solved it.
    """
    messages: list[dict[str, Any]] = []
    for task_id, turns in episodes:
        answer = None
        for index, (observation, action) in enumerate(turns):
            if answer is None:
                messages.append({"role": "user", "content": observation})
            else:
                messages.append({"role": "tool", "tool_call_id": answer, "content": observation})
            answer = f"example_{task_id}_{index}"
            call = {"name": TOOL_NAME, "arguments": json.dumps({"action": action})}
            messages.append({
                "role": "assistant",
                "content": "",  # not null: see _sent
                "tool_calls": [{"id": answer, "type": "function", "function": call}],
            })  # fmt: skip
        if answer is not None:
            messages.append({"role": "tool", "tool_call_id": answer, "content": EXAMPLE_END})
    return messages
