"""Tool-native episodes: every message tool mode sends follows the OpenAI tool-calling convention.

An episode of GuessNumber is played against a real HTTP server on 127.0.0.1
(``llm_fixtures.ChatServer``) whose replies are scripted: a call, a text
reply with reasoning, several calls at once, a malformed call, a call with no
id.  Every request is checked against the OpenAI message schema
(:func:`check_schema`), and each turn's messages and transcript record are
checked one by one.
"""

from __future__ import annotations

import json
from collections import deque

import gymnasium as gym
import pytest
from llm_fixtures import ChatServer

from agent_envs.evaluation import evaluate
from baselines.llm.agents.openai_agent import OpenAIChatAgent
from baselines.llm.prompting.tool_messages import EXAMPLE_END, NOT_PLAYED, TOOL_SYSTEM_PROMPT
from wrappers.errors import InvalidValue
from wrappers.info import ChatHistory

GUESS = "agent_envs/GuessNumber-v0"
KEYS = {
    "system": {"role", "content"},
    "user": {"role", "content"},
    "assistant": {"role", "content", "tool_calls"},
    "tool": {"role", "content", "tool_call_id"},
}


def check_schema(messages):
    """Assert that ``messages`` is a valid OpenAI chat with tool calls.

    Roles and their keys only (no reasoning field goes back), string contents
    (the empty one beside calls; never ``null`` or missing, which
    llama-cpp-python's server refuses), calls with an id, ``type: "function"``, a
    name and arguments as a JSON string, and each call answered by exactly
    one ``tool`` message right after its assistant message.
    """
    unanswered: set[str] = set()
    for message in messages:
        role = message["role"]
        assert set(message) <= KEYS[role] and "content" in message, message
        if role == "tool":
            assert message["tool_call_id"] in unanswered, message
            unanswered.discard(message["tool_call_id"])
            assert isinstance(message["content"], str)
            continue
        assert not unanswered, f"calls {unanswered} unanswered before {message}"
        calls = message.get("tool_calls")
        assert isinstance(message["content"], str), message
        for call in calls or ():
            assert set(call) == {"id", "type", "function"} and call["type"] == "function"
            assert isinstance(call["id"], str) and call["id"] not in unanswered
            assert isinstance(call["function"]["name"], str)
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
            unanswered.add(call["id"])
    assert not unanswered, f"calls {unanswered} unanswered at the end"
    assert messages[-1]["role"] in ("user", "tool")


def call(action, call_id="call_x", name="act", arguments=None):
    arguments = json.dumps({"action": action}) if arguments is None else arguments
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def reply(content=None, *calls, **fields):
    return {"role": "assistant", "content": content, "tool_calls": list(calls), **fields}


SCRIPT = [
    reply(None, call("50", "call_a")),  # 0: a tool-call turn
    reply("I think 25.", reasoning_content="secret plan"),  # 1: text, no call
    reply(None, call("25", "call_b"), call("75", "call_c"), call("up", "call_d", name="move")),
    reply("Hmm.", call("", "call_e", arguments="{not json")),  # 3: a malformed call
    {"role": "assistant", "content": None, "tool_calls": [  # 4: a call with no id
        {"type": "function", "function": {"name": "act", "arguments": {"action": "12"}}}]},
    reply(None, call("13", "call_f")),
]  # fmt: skip


@pytest.fixture
def played(tmp_path):
    """Play one episode through the scripted replies; return the requests and the transcript."""
    script = deque(SCRIPT)
    server = ChatServer(lambda body: script.popleft())
    try:
        agent = OpenAIChatAgent(server.base_url, "m", tool_calls=True, temperature=0)
        env = lambda: ChatHistory(gym.make(GUESS), record="raw")  # noqa: E731
        log = tmp_path / "run.jsonl"
        evaluate(agent, env, ks=[1], budgets=[6], tasks=[3], samples=1, log_path=log,
                 transcripts=True)  # fmt: skip
    finally:
        server.close()
    _, line = [json.loads(text) for text in log.read_text().splitlines()]  # a header, an episode
    return [request["body"] for request in server.requests], line["transcript"]["steps"]


def test_every_request_is_a_valid_tool_dialogue(played):
    bodies, _ = played
    assert len(bodies) == 6
    for body in bodies:
        check_schema(body["messages"])
        assert body["tool_choice"] == "auto" and body["tools"][0]["function"]["name"] == "act"
        assert "secret plan" not in json.dumps(body)  # reasoning is never sent back


def test_the_system_prompt_asks_for_the_call_not_a_text_line(played):
    bodies, _ = played
    system, task = bodies[0]["messages"]
    assert system == {"role": "system", "content": TOOL_SYSTEM_PROMPT}
    assert "`act`" in system["content"] and "Action:" not in system["content"]
    assert task["role"] == "user"


def test_a_tool_call_turn_is_answered_by_a_tool_message(played):
    bodies, _ = played
    assistant, answer = bodies[1]["messages"][2:]
    assert assistant == {"role": "assistant", "content": "", "tool_calls": [call("50", "call_a")]}
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_a"
    assert "50" in answer["content"]


def test_a_text_turn_stays_text_and_the_answer_is_a_user_message(played):
    bodies, steps = played
    assistant, answer = bodies[2]["messages"][4:]
    assert assistant == {"role": "assistant", "content": "I think 25."}
    assert answer["role"] == "user" and answer["content"] == steps[1]["observation"]
    record = json.loads(steps[1]["raw"])
    assert record["reasoning_content"] == "secret plan" and steps[1]["action"] == ""


def test_of_several_calls_the_first_act_is_played_and_each_call_is_answered(played):
    bodies, steps = played
    assistant, *answers = bodies[3]["messages"][6:]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_b", "call_c", "call_d"]
    assert [(m["role"], m["tool_call_id"]) for m in answers] == [
        ("tool", "call_c"), ("tool", "call_d"), ("tool", "call_b")]  # fmt: skip
    assert answers[0]["content"] == answers[1]["content"] == NOT_PLAYED
    assert answers[2]["content"] == steps[2]["observation"]  # the env's answer comes last
    assert steps[2]["action"] == "25" and json.loads(steps[2]["raw"])["ignored_calls"] == 2


def test_a_malformed_call_is_kept_in_the_transcript_and_not_sent_back(played):
    bodies, steps = played
    assistant, answer = bodies[4]["messages"][-2:]
    assert assistant == {"role": "assistant", "content": "Hmm."}
    assert answer["role"] == "user"
    record = json.loads(steps[3]["raw"])
    assert record["unsent_calls"][0]["function"]["arguments"] == "{not json"
    assert record["ignored_calls"] == 1 and steps[3]["action"] == ""


def test_a_call_without_an_id_gets_one_and_arguments_go_back_as_a_json_string(played):
    bodies, steps = played
    assistant, answer = bodies[5]["messages"][-2:]
    (sent,) = assistant["tool_calls"]
    assert sent["id"] == "call_4_0" and answer["tool_call_id"] == "call_4_0"
    assert json.loads(sent["function"]["arguments"]) == {"action": "12"}
    assert steps[4]["action"] == "12"


def test_the_transcript_records_the_messages_that_are_sent(played):
    bodies, steps = played
    for turn, step in enumerate(steps[:5]):
        record = json.loads(step["raw"])
        sent = bodies[turn + 1]["messages"][len(bodies[turn]["messages"])]
        kept = {key: record[key] for key in ("role", "content", "tool_calls") if key in record}
        if not record.get("tool_calls"):
            kept.pop("tool_calls", None)
        elif kept.get("content") is None:  # a null content beside calls goes out empty
            kept["content"] = ""
        assert sent == kept


def test_a_history_of_actions_only_is_rebuilt_as_calls():
    env = ChatHistory(gym.make(GUESS), system_prompt="Play.")  # record="action"
    env.reset(seed=0, options={"task_id": 0})
    env.step("50")
    observation, *_, info = env.step("")
    agent = OpenAIChatAgent("http://127.0.0.1:9/v1", "m", tool_calls=True)
    messages = agent.request_body(observation, info)["messages"]
    check_schema(messages)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant",
                                             "user"]  # fmt: skip
    assert messages[0]["content"] == "Play."
    assert json.loads(messages[2]["tool_calls"][0]["function"]["arguments"]) == {"action": "50"}


def test_few_shot_examples_are_tool_call_turns():
    agent = OpenAIChatAgent("http://127.0.0.1:9/v1", "m", tool_calls=True, few_shot=2,
                            env_id=GUESS)  # fmt: skip
    messages = agent.request_body("I am thinking of a number.", {"task_id": 0})["messages"]
    check_schema(messages)
    assert messages[0]["content"] == TOOL_SYSTEM_PROMPT and messages[-1]["role"] == "user"
    assert sum(m["content"] == EXAMPLE_END for m in messages) == 2
    assert not any("Action:" in m["content"] for m in messages)
    assert all(m.get("tool_calls") for m in messages if m["role"] == "assistant")


def test_a_long_tool_dialogue_is_cut_by_whole_exchanges():
    script = deque([reply(None, call(str(n), f"call_{n}"), call("1", f"extra_{n}"))
                    for n in range(40, 60)])  # fmt: skip
    server = ChatServer(lambda body: script.popleft(), context_limit=9)
    try:
        agent = OpenAIChatAgent(server.base_url, "m", tool_calls=True, temperature=0)
        env = lambda: ChatHistory(gym.make(GUESS), record="raw")  # noqa: E731
        result = evaluate(agent, env, ks=[1], budgets=[5], tasks=[3], samples=1)
    finally:
        server.close()
    # evaluate() counts an agent that gives up on a refused prompt as an episode
    # error; none may be: every refused prompt is cut and sent again.
    assert result.errors == 0
    sent = [request["body"]["messages"] for request in server.requests]
    for messages in sent:
        check_schema(messages)
    refused = [i for i, messages in enumerate(sent) if len(messages) > 9]
    assert refused  # the dialogue did outgrow the server's context
    for i in refused:
        retry = sent[i + 1]  # the same turn, sent again with older exchanges dropped
        assert len(retry) <= 9 and retry[:2] == sent[i][:2] and retry[-1] == sent[i][-1]
    assert len(sent) - len(refused) == 5  # one answered request per turn of the budget


@pytest.mark.parametrize(
    ("choice", "sent"),
    [("auto", "auto"), ("required", "required"),
     ("act", {"type": "function", "function": {"name": "act"}})],
)  # fmt: skip
def test_tool_choice_is_an_option(choice, sent):
    agent = OpenAIChatAgent("http://127.0.0.1:9/v1", "m", tool_calls=True, tool_choice=choice)
    assert agent.request_body("Guess.", {"admissible_actions": ["1"]})["tool_choice"] == sent


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"tool_calls": True, "tool_choice": "move"}, "tool_choice must be one of auto, required"),
     ({"tool_calls": True, "tool_choice": None}, "got None"),
     ({"tool_choice": "required"}, "tool_choice='required' needs tool_calls=True")],
)  # fmt: skip
def test_a_bad_tool_choice_is_refused_in_one_line(kwargs, message):
    with pytest.raises(InvalidValue, match=message) as refused:
        OpenAIChatAgent("http://127.0.0.1:9/v1", "m", **kwargs)
    assert "\n" not in str(refused.value)
