"""Few-shot oracle examples, reply formats and stopping, on the tiny model built offline."""

from __future__ import annotations

import gymnasium as gym
import pytest

from agent_envs.protocol import ENV_ID, SUCCESS, TASK_ID
from baselines.llm.few_shot import (
    FIRST_EXAMPLE_ID,
    PromptStyle,
    check_not_example,
    example_messages,
    oracle_episodes,
)
from baselines.llm.prompting import (
    ACTION_SYSTEM_PROMPT,
    DEFAULT_SYSTEM_PROMPT,
    format_action,
    insert_examples,
    parse_action,
    reply_complete,
)

# One id per kind of oracle: exact arithmetic, planning, privileged (map,
# object locations, target product), stochastic.
FAMILIES = [
    "agent_envs/GuessNumber-v0",
    "agent_envs/Sokoban-v0",
    "agent_envs/Maze-5x5-v0",
    "agent_envs/Household-Small-v0",
    "agent_envs/WebShop-v0",
    "agent_envs/FrozenLake-Slippery-v0",
]


# ------------------------------------------------------------------ examples
@pytest.mark.parametrize("env_id", FAMILIES)
def test_examples_are_oracle_episodes_on_reserved_ids(env_id):
    episodes = oracle_episodes(env_id, 2)
    assert len(episodes) == 2 and len({task for task, _ in episodes}) == 2
    for task_id, turns in episodes:
        assert task_id >= FIRST_EXAMPLE_ID  # never an id evaluation or training counts to
        # Replaying the actions shows exactly the recorded observations (what
        # the agent sees, nothing of a privileged oracle's map), each action is
        # one the oracle offers there, and the last one solves the task.
        env = gym.make(env_id)
        observation, _ = env.reset(seed=0, options={TASK_ID: task_id})
        for shown, action in turns:
            assert shown == observation
            assert action in env.unwrapped.oracle_actions()
            observation, _, _, _, info = env.step(action)
        assert info[SUCCESS]


def test_the_shortest_reserved_tasks_are_used():
    env = gym.make("agent_envs/GuessNumber-v0")
    lengths = []
    for task_id in range(FIRST_EXAMPLE_ID, FIRST_EXAMPLE_ID + 32):
        env.reset(seed=0, options={TASK_ID: task_id})
        lengths.append(env.unwrapped.oracle_turns())
    ((_, turns),) = oracle_episodes("agent_envs/GuessNumber-v0", 1)
    assert len(turns) == min(lengths)


def test_example_messages_alternate_in_the_agents_format():
    for reply_format in ("action", "think"):
        messages = example_messages("agent_envs/Sokoban-v0", 2, reply_format)
        roles = [m["role"] for m in messages]
        assert roles == ["user", "assistant"] * (len(messages) // 2)
        actions = [a for _, turns in oracle_episodes("agent_envs/Sokoban-v0", 2) for _, a in turns]
        replies = [m["content"] for m in messages if m["role"] == "assistant"]
        assert replies == [format_action(a, reply_format) for a in actions]
        assert [parse_action(reply) for reply in replies] == actions


def test_example_ids_are_refused_as_episodes():
    check_not_example([0, 10_000, FIRST_EXAMPLE_ID - 1])
    with pytest.raises(ValueError, match="reserved for few-shot examples"):
        check_not_example([3, FIRST_EXAMPLE_ID])
    style = PromptStyle(few_shot=1)
    with pytest.raises(ValueError, match="reserved"):
        style.examples({TASK_ID: FIRST_EXAMPLE_ID + 5, ENV_ID: "agent_envs/GuessNumber-v0"})


def test_prompt_style_defaults_follow_the_examples():
    plain = PromptStyle()
    assert (plain.reply_format, plain.system_prompt, plain.required_info) == (
        "think",
        DEFAULT_SYSTEM_PROMPT,
        (),
    )
    shots = PromptStyle(few_shot=2)
    assert (shots.reply_format, shots.system_prompt, shots.required_info) == (
        "action",
        ACTION_SYSTEM_PROMPT,
        (ENV_ID,),
    )
    assert PromptStyle(few_shot=1, env_id="agent_envs/GuessNumber-v0").required_info == ()
    assert PromptStyle(few_shot=1, system_prompt=None).system_prompt is None
    with pytest.raises(ValueError, match="env's id"):
        shots.examples({TASK_ID: 0})
    with pytest.raises(ValueError, match="reply_format"):
        PromptStyle(reply_format="json")
    with pytest.raises(ValueError, match="few_shot"):
        PromptStyle(few_shot=-1)


def test_examples_go_after_the_system_prompt():
    examples = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
    system = {"role": "system", "content": "s"}
    task = {"role": "user", "content": "task"}
    assert insert_examples([system, task], examples) == [system, *examples, task]
    assert insert_examples([task], examples) == [*examples, task]
    assert insert_examples([task], ()) == [task]


# ------------------------------------------------------------------ stopping
@pytest.mark.parametrize(
    ("text", "reply_format", "complete"),
    [
        ("49", "action", False),
        ("49\n", "action", True),
        ("\n\n", "action", False),  # blank lines are no action yet
        ("\n49\nmore", "action", True),
        ("I think 49.", "think", False),
        ("I think 49.\n", "think", False),
        ("I think 49.\nAction: 49", "think", False),  # the line has not ended
        ("I think 49.\nAction: 49\n", "think", True),
        ("**Action:** up\n", "think", True),
        ("Action:\n", "think", False),
        ("Action:\nup\n", "think", True),
    ],
)
def test_reply_complete(text, reply_format, complete):
    assert reply_complete(text, reply_format) is complete
    if complete:  # a complete reply already holds its action
        assert parse_action(text) in ("49", "up")


def test_the_openai_agent_sends_the_same_examples_and_stops_at_the_line():
    from baselines.llm.openai_agent import OpenAIChatAgent

    agent = OpenAIChatAgent("http://127.0.0.1:9/v1", "m", few_shot=1)
    assert agent.required_info == (ENV_ID,)
    info = {TASK_ID: 4, ENV_ID: "agent_envs/GuessNumber-v0", "episode_seed": 1}
    body = agent.request_body("The task.", info)
    examples = list(example_messages("agent_envs/GuessNumber-v0", 1, "action"))
    assert body["messages"] == [
        {"role": "system", "content": ACTION_SYSTEM_PROMPT},
        *examples,
        {"role": "user", "content": "The task."},
    ]
    assert body["stop"] == ["\n"]
    thinking = OpenAIChatAgent("http://127.0.0.1:9/v1", "m").request_body("The task.", {})
    assert "stop" not in thinking and thinking["messages"][0]["content"] == DEFAULT_SYSTEM_PROMPT
