"""OpenAIChatAgent(tool_calls=True): the action offered as a function, the move read from the call.

Against a real HTTP server on 127.0.0.1 (``llm_fixtures.ChatServer``) that
answers with OpenAI-style ``tool_calls``, as vLLM, SGLang or llama.cpp's
server with a function-calling chat format do.
"""

from __future__ import annotations

import json

import pytest
from llm_fixtures import ChatServer

from agent_envs.evaluation import evaluate
from baselines.llm.agents.openai_agent import OpenAIChatAgent

LAKE = "agent_envs/FrozenLake-v0"


def call(action, name="act"):
    arguments = json.dumps({"action": action})
    return {"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments}}


def first_choice(body):
    """Call ``act`` with the first action the schema's enum offers."""
    (tool,) = body["tools"]
    action = tool["function"]["parameters"]["properties"]["action"]["enum"][0]
    return {"role": "assistant", "content": None, "tool_calls": [call(action)]}


@pytest.fixture
def server():
    chat = ChatServer(first_choice)
    yield chat
    chat.close()


def test_the_action_is_offered_as_a_function_with_an_enum_of_admissible_actions(server):
    agent = OpenAIChatAgent(server.base_url, "m", tool_calls=True, temperature=0)
    assert "admissible_actions" in agent.required_info
    info = {"admissible_actions": ["up", "right"], "episode_seed": 1, "turn": 0}
    action = agent.act("The lake.\n\nS@FF", info)
    assert action == "up"
    # The raw (the transcript's) is the reply as it goes back to the server.
    assert json.loads(action.raw) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("up")],
    }
    body = server.requests[0]["body"]
    (tool,) = body["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "act"
    assert tool["function"]["description"]
    parameters = tool["function"]["parameters"]
    assert parameters["required"] == ["action"]
    assert parameters["properties"]["action"]["enum"] == ["up", "right"]
    assert body["tool_choice"] == "auto" and "stop" not in body


def test_a_large_action_set_is_free_text(server):
    agent = OpenAIChatAgent(server.base_url, "m", tool_calls=True)
    body = agent.request_body("Guess.", {"admissible_actions": [str(n) for n in range(100)]})
    assert "enum" not in body["tools"][0]["function"]["parameters"]["properties"]["action"]


def test_an_evaluation_plays_through_tool_calls(server):
    agent = OpenAIChatAgent(server.base_url, "m", tool_calls=True, temperature=0)
    result = evaluate(agent, LAKE, ks=[1], budgets=[6], tasks=4, samples=1)
    rates = result.diagnostics
    assert rates["invalid_action_rate"] == 0.0 and rates["unparsable_rate"] == 0.0
    assert len(server.requests) >= 4


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "Action: up"},  # text, no call
        {"role": "assistant", "content": None, "tool_calls": [call("up", name="move")]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "act", "arguments": "{not json"}}]},
    ],
    ids=["text-only", "another-tool", "bad-arguments"],
)  # fmt: skip
def test_a_reply_without_a_call_of_act_counts_as_unparsable(message):
    chat = ChatServer(lambda body: message)
    try:
        agent = OpenAIChatAgent(chat.base_url, "m", tool_calls=True, temperature=0)
        result = evaluate(agent, LAKE, ks=[1], budgets=[3], tasks=2, samples=1)
    finally:
        chat.close()
    assert result.diagnostics["unparsable_rate"] == 1.0
    assert result.pass_at(1, 3) == 0.0
