"""ChatHistory: the dialogue as chat messages, windowed, copied, and reset per episode."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

from agent_envs.protocol import AgentAction
from wrappers import TurnBudget
from wrappers.info import ChatHistory

ENV_ID = "agent_envs/GuessNumber-v0"
GUESSES = ["50", "25", "hello", "75", "12", "90", "3"]


def play(env, task_id=0, seed=0, actions=GUESSES):
    """Reset and play ``actions``; return the observations and the infos."""
    observation, info = env.reset(seed=seed, options={"task_id": task_id})
    observations, infos = [observation], [info]
    for action in actions:
        observation, _, terminated, truncated, info = env.step(action)
        observations.append(observation)
        infos.append(info)
        if terminated or truncated:
            break
    return observations, infos


def roles(messages):
    return [message["role"] for message in messages]


def test_dialogue_alternates_env_as_user_and_actions_as_assistant():
    env = ChatHistory(gym.make(ENV_ID))
    observations, infos = play(env, actions=GUESSES[:3])
    messages = infos[-1]["messages"]
    assert roles(messages) == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert [m["content"] for m in messages[0::2]] == observations
    assert [m["content"] for m in messages[1::2]] == GUESSES[:3]
    # The reset info already has the task statement alone.
    assert infos[0]["messages"] == [{"role": "user", "content": observations[0]}]


def test_observations_rewards_and_flags_pass_through_unchanged():
    wrapped, bare = ChatHistory(gym.make(ENV_ID)), gym.make(ENV_ID)
    assert (
        wrapped.reset(seed=3, options={"task_id": 5})[0]
        == bare.reset(seed=3, options={"task_id": 5})[0]
    )
    for action in GUESSES:
        got, want = wrapped.step(action), bare.step(action)
        assert got[:4] == want[:4]
        assert {k: v for k, v in got[4].items() if k != "messages"} == want[4]


def test_system_prompt_comes_first():
    env = ChatHistory(gym.make(ENV_ID), system_prompt="Be brief.")
    _, infos = play(env, actions=GUESSES[:1])
    assert infos[-1]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert roles(infos[-1]["messages"]) == ["system", "user", "assistant", "user"]


@pytest.mark.parametrize("system_prompt", [None, "sys"])
def test_window_keeps_the_last_exchanges_and_always_the_task(system_prompt):
    env = ChatHistory(gym.make(ENV_ID), window=2, system_prompt=system_prompt)
    observations, infos = play(env, actions=GUESSES[:5])
    messages = infos[-1]["messages"]
    head = [{"role": "system", "content": "sys"}] if system_prompt else []
    assert messages == [
        *head,
        {"role": "user", "content": observations[0]},
        {"role": "assistant", "content": GUESSES[3]},
        {"role": "user", "content": observations[4]},
        {"role": "assistant", "content": GUESSES[4]},
        {"role": "user", "content": observations[5]},
    ]


def test_window_of_one_still_shows_the_current_observation():
    env = ChatHistory(gym.make(ENV_ID), window=1)
    observations, infos = play(env, actions=GUESSES[:4])
    assert [m["content"] for m in infos[-1]["messages"]] == [
        observations[0],
        GUESSES[3],
        observations[4],
    ]


def test_nothing_leaks_from_one_episode_to_the_next():
    env = ChatHistory(gym.make(ENV_ID), window=3, system_prompt="sys")
    play(env, task_id=1, actions=GUESSES)
    observation, info = env.reset(seed=9, options={"task_id": 2})
    assert info["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": observation},
    ]
    assert env.messages() == info["messages"]
    # The second episode's dialogue is exactly what a fresh wrapper records.
    _, second = play(env, task_id=2, seed=9, actions=GUESSES[:2])
    _, fresh = play(
        ChatHistory(gym.make(ENV_ID), window=3, system_prompt="sys"),
        task_id=2,
        seed=9,
        actions=GUESSES[:2],
    )
    assert second[-1]["messages"] == fresh[-1]["messages"]
    assert "hello" not in str(second[-1]["messages"])


def test_nothing_leaks_after_truncation_by_a_turn_budget():
    env = ChatHistory(TurnBudget(gym.make(ENV_ID), max_turns=2))
    _, infos = play(env, actions=GUESSES)
    assert len(infos) == 3  # truncated after two turns
    observation, info = env.reset(seed=0, options={"task_id": 4})
    assert info["messages"] == [{"role": "user", "content": observation}]


def test_messages_are_a_copy_the_agent_cannot_corrupt():
    env = ChatHistory(gym.make(ENV_ID))
    _, info = env.reset(seed=0, options={"task_id": 0})
    info["messages"][0]["content"] = "tampered"
    info["messages"].append({"role": "user", "content": "injected"})
    _, _, _, _, info = env.step("50")
    assert "tampered" not in str(info["messages"]) and "injected" not in str(info["messages"])
    assert len(info["messages"]) == 3
    first = env.messages()
    first.clear()
    assert len(env.messages()) == 3


def test_record_raw_keeps_the_full_generation():
    env = ChatHistory(gym.make(ENV_ID), record="raw")
    env.reset(seed=0, options={"task_id": 0})
    _, _, _, _, info = env.step(AgentAction("50", raw="Halve the range.\nAction: 50"))
    assert info["messages"][1]["content"] == "Halve the range.\nAction: 50"
    _, _, _, _, info = env.step("25")  # a plain str has no raw: the action itself
    assert info["messages"][3]["content"] == "25"


def test_default_records_the_action_not_the_raw_text():
    env = ChatHistory(gym.make(ENV_ID))
    env.reset(seed=0, options={"task_id": 0})
    _, _, _, _, info = env.step(AgentAction("50", raw="long reasoning\nAction: 50"))
    assert info["messages"][1]["content"] == "50"


def test_visible_budget_line_is_part_of_the_user_text():
    env = ChatHistory(TurnBudget(gym.make(ENV_ID), max_turns=5, visible=True))
    _, infos = play(env, actions=GUESSES[:1])
    assert infos[-1]["messages"][-1]["content"].endswith("[Turns left: 4 of 5]")
    assert infos[-1]["turn"] == 1


def test_options_pass_through_unchanged():
    env = TurnBudget(ChatHistory(gym.make(ENV_ID)), max_turns=10)
    options = {"task_id": 3, "budget": 2}
    _, info = env.reset(seed=0, options=options)
    assert options == {"task_id": 3, "budget": 2}
    assert info["budget"] == 2 and info["task_id"] == 3


def test_step_before_reset_raises():
    env = ChatHistory(gym.make(ENV_ID))
    with pytest.raises(gym.error.ResetNeeded):
        env.step("50")
    assert env.messages() == []


def test_rebuilds_from_spec_and_pickles():
    env = ChatHistory(gym.make(ENV_ID), window=2, system_prompt="sys")
    rebuilt = gym.make(env.spec)
    assert isinstance(rebuilt, ChatHistory)
    assert (rebuilt.window, rebuilt.system_prompt) == (2, "sys")
    _, infos = play(env, actions=GUESSES[:3])
    clone = pickle.loads(pickle.dumps(env))
    assert clone.messages() == infos[-1]["messages"]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"window": 0}, ValueError),
        ({"window": -3}, ValueError),
        ({"window": True}, TypeError),
        ({"window": 2.0}, TypeError),
        ({"system_prompt": 5}, TypeError),
        ({"record": "thoughts"}, ValueError),
    ],
)
def test_bad_arguments_fail_clearly(kwargs, error):
    with pytest.raises(error):
        ChatHistory(gym.make(ENV_ID), **kwargs)
