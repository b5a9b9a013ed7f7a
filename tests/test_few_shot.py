"""Few-shot oracle examples, reply formats and stopping, on the tiny model built offline."""

from __future__ import annotations

import statistics

import gymnasium as gym
import pytest

from agent_envs.evaluation import evaluate
from agent_envs.instances import instance_key
from baselines.llm.prompting.few_shot import (
    FIRST_EXAMPLE_ID,
    PromptStyle,
    check_not_example,
    check_not_example_instance,
    example_messages,
    example_task_ids,
    oracle_episodes,
)
from baselines.llm.prompting.messages import insert_examples
from baselines.llm.prompting.replies import (
    ACTION_SYSTEM_PROMPT,
    DEFAULT_SYSTEM_PROMPT,
    format_action,
    parse_action,
    reply_complete,
)
from wrappers.protocol import ENV_ID, SUCCESS, TASK_ID

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
GUESS_20 = "agent_envs/GuessNumber-20-v0"


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


@pytest.mark.parametrize("env_id", [*FAMILIES, GUESS_20])
def test_examples_are_distinct_instances_of_typical_length(env_id):
    episodes = oracle_episodes(env_id, 3)
    keys = [instance_key(env_id, task_id) for task_id, _ in episodes]
    assert len(set(keys)) == 3
    # Typical games: no reserved task's length is nearer the pool's median
    # than the farthest example's, unless it repeats a shown instance.
    env = gym.make(env_id)
    lengths = {}
    for task_id in example_task_ids():
        env.reset(seed=0, options={TASK_ID: task_id})
        lengths[task_id] = env.unwrapped.oracle_turns()
    median = statistics.median_low([n for n in lengths.values() if n is not None])
    worst = max(abs(lengths[task_id] - median) for task_id, _ in episodes)
    nearer = {
        instance_key(env_id, task_id)
        for task_id, turns in lengths.items()
        if turns is not None and abs(turns - median) < worst
    }
    assert nearer <= set(keys)


def test_guess_number_20_shows_three_different_typical_games():
    # Shortest-first showed secret 5 (2 turns) three times; now three 4-turn games.
    episodes = oracle_episodes(GUESS_20, 3)
    secrets = [int(turns[-1][1]) for _, turns in episodes]
    assert len(set(secrets)) == 3 and 5 not in secrets
    assert [len(turns) for _, turns in episodes] == [4, 4, 4]


def test_a_task_that_is_an_examples_instance_is_refused_before_the_run():
    shown = {int(turns[-1][1]) for _, turns in oracle_episodes(GUESS_20, 3)}
    env = gym.make(GUESS_20)
    by_secret = {}
    for task_id in range(100):
        env.reset(options={TASK_ID: task_id})
        by_secret.setdefault(int(env.unwrapped.task), task_id)
    leaked = [by_secret[s] for s in sorted(shown)]
    clean = [t for s, t in by_secret.items() if s not in shown]

    class Guesser:  # the few-shot agents' check, without a model
        style = PromptStyle(few_shot=3, env_id=GUESS_20)
        check_tasks = style.check_tasks

        def act(self, observation, info):
            self.style.example_env(info)
            return "10"

    with pytest.raises(ValueError, match=f"task {leaked[0]} of {GUESS_20} is the same instance"):
        evaluate(Guesser(), GUESS_20, ks=[1], budgets=[3], tasks=[*clean[:2], leaked[0]])
    result = evaluate(Guesser(), GUESS_20, ks=[1], budgets=[3], tasks=clean, n_bootstrap=10)
    assert result.episodes == len(clean) == 17 and result.errors == 0
    # A policy that skips the up-front check still meets it on every episode.
    Guesser.check_tasks = None
    result = evaluate(Guesser(), GUESS_20, ks=[1], budgets=[3], tasks=leaked[:1], n_bootstrap=10)
    assert result.errors == 1 and "same instance" in result.error_examples[0]
    with pytest.raises(ValueError, match="same instance"):
        check_not_example_instance(GUESS_20, 3, leaked[1:2])
    check_not_example_instance(GUESS_20, 0, leaked)  # no examples, nothing to leak


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
    from baselines.llm.agents.openai_agent import OpenAIChatAgent

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


def test_the_docs_show_the_examples_each_family_gets():
    import pathlib

    from tools.few_shot_table import rows

    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "real_llm.md").read_text()
    for line in rows():
        assert line in page
