"""The prompting and parsing code the LLM agents share.

``baselines.llm.prompting.replies``, ``baselines.llm.prompting.messages`` and
``baselines.llm.prompting.prompt_encoder``.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

from baselines.llm.prompting.messages import (
    build_messages,
    drop_oldest_exchanges,
    plain_prompt,
    turn_of,
)
from baselines.llm.prompting.replies import parse_action
from wrappers.info import ChatHistory
from wrappers.utils.seeding import sampling_seed


# ----------------------------------------------------------- shared parsing
@pytest.mark.parametrize(
    ("generation", "action"),
    [
        ("Action: up", "up"),
        ("I will go up.\nAction: up", "up"),
        ("Action: left\nHmm, no.\nAction: right", "right"),  # the last Action line wins
        ("**Action:** push box", "push box"),
        ("> ACTION : 42  ", "42"),
        ("- action: go to cabinet 1", "go to cabinet 1"),
        ("Action:\n  guess 50\n", "guess 50"),  # the action on the next line
        ("The answer is \\boxed{37}.", "37"),
        ("\\boxed{a} then \\boxed{b}", "b"),
        ("\\boxed{f(\\{x\\})}", "f(\\{x\\})"),
        ("\\boxed{cut off", "\\boxed{cut off"),  # unbalanced: falls through to the first line
        ("Action: up\n\\boxed{down}", "up"),  # an Action line beats a box
        ("\n\n  go north  \nbecause it is open", "go north"),
        ("Transaction: 5\nfoo", "Transaction: 5"),  # not an Action line
    ],
)
def test_parse_action(generation, action):
    assert parse_action(generation) == action


@pytest.mark.parametrize("generation", ["", "   ", "\n\n"])
def test_an_empty_generation_is_passed_on_as_is(generation):
    assert parse_action(generation) == generation


def test_build_messages():
    assert build_messages("obs", {}, "sys") == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "obs"},
    ]
    assert build_messages("obs", {}, None) == [{"role": "user", "content": "obs"}]
    history = [{"role": "system", "content": "wrapper"}, {"role": "user", "content": "task"}]
    messages = build_messages("task", {"messages": history}, "agent")
    assert messages == history  # the wrapper's system message wins
    messages[0]["content"] = "changed"
    assert history[0]["content"] == "wrapper"  # a fresh copy
    with pytest.raises(TypeError, match="messages"):
        build_messages("obs", {"messages": "not a list"}, None)


def test_the_current_observation_is_always_the_last_message():
    """Wrappers outside ChatHistory (ShowActions, a visible budget) add to the observation."""
    from wrappers import TurnBudget
    from wrappers.observation import ShowActions

    env = ShowActions(TurnBudget(ChatHistory(gym.make("agent_envs/GuessNumber-v0")), 5, True))
    observation, info = env.reset(seed=0, options={"task_id": 0})
    observation, _, _, _, info = env.step("50")
    messages = build_messages(observation, info, None)
    assert messages[-1] == {"role": "user", "content": observation}
    assert "Admissible actions: 1, 2" in messages[-1]["content"]
    assert messages[:-1] == info["messages"][:-1]
    # A history that ends with the agent's turn gets the observation appended.
    ending = [{"role": "user", "content": "task"}, {"role": "assistant", "content": "a"}]
    assert build_messages("now", {"messages": ending}, None)[-1] == {
        "role": "user",
        "content": "now",
    }


def dialogue(exchanges, system=True):
    messages = [{"role": "system", "content": "S"}] if system else []
    messages.append({"role": "user", "content": "task"})
    for index in range(exchanges):
        messages += [
            {"role": "assistant", "content": f"a{index}"},
            {"role": "user", "content": f"o{index}"},
        ]
    return messages


@pytest.mark.parametrize("system", [True, False])
@pytest.mark.parametrize("limit", [1, 3, 4, 5, 7, 9, 30])
def test_drop_oldest_exchanges_drops_as_few_as_needed(system, limit):
    messages = dialogue(6, system)
    kept = drop_oldest_exchanges(messages, lambda candidate: len(candidate) <= limit)
    head = 2 if system else 1
    # Brute force: the fewest whole exchanges to drop; the latest exchange always stays.
    fewest = next((d for d in range(6) if len(messages) - 2 * d <= limit), 5)
    assert kept == messages[:head] + messages[head + 2 * fewest :]
    assert kept[-2:] == messages[-2:]
    assert [m["role"] for m in kept[head:]] == ["assistant", "user"] * (6 - fewest)


def test_plain_prompt_format():
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "V"},
    ]
    assert plain_prompt(messages) == "System: S\n\nUser: U\n\nAssistant: A\n\nUser: V\n\nAssistant:"


def test_sampling_seed_depends_on_every_input():
    base = sampling_seed(0, 7, 1, "p")
    assert base == sampling_seed(0, 7, 1, "p")
    assert 0 <= base < 2**31
    others = {sampling_seed(1, 7, 1, "p"), sampling_seed(0, 8, 1, "p"), sampling_seed(0, 7, 2, "p")}
    assert base not in others and len(others) == 3
    assert sampling_seed(0, 7, 1, "q") != base


def test_turn_of():
    assert turn_of({"turn": 4}) == 4
    assert turn_of({"messages": dialogue(3)}) == 3
    assert turn_of({}) == 0


# ------------------------------------------------------- the shared policy base
def test_the_llm_policy_base_owns_the_prompt_style_sampling_and_reply_seeds():
    from baselines.llm.agents.openai_agent import OpenAIChatAgent
    from baselines.llm.agents.policy import LLMPolicy
    from baselines.llm.prompting.replies import ACTION_SYSTEM_PROMPT
    from wrappers.protocol import ENV_ID

    policy = LLMPolicy(few_shot=1, temperature=0.5, max_new_tokens=12, seed=5)
    assert (policy.style.reply_format, policy.system_prompt) == ("action", ACTION_SYSTEM_PROMPT)
    assert policy.required_info == (ENV_ID,)  # the env's id, for the examples
    assert (policy.temperature, policy.top_p, policy.max_new_tokens) == (0.5, 1.0, 12)
    # Token ids and their text key the same seed, the one wrappers.utils.seeding derives.
    expected = sampling_seed(5, 7, 1, "1,2,3")
    assert policy.reply_seed(7, 1, [1, 2, 3]) == policy.reply_seed(7, 1, "1,2,3") == expected
    # Without an episode seed, a policy draws one from its own seeded generator.
    first, again = LLMPolicy(seed=5), LLMPolicy(seed=5)
    drawn = [first.sample_seed({"turn": 0}, [1]) for _ in range(2)]
    assert drawn == [again.sample_seed({"turn": 0}, [1]) for _ in range(2)]
    assert drawn[0] != drawn[1]
    agent = OpenAIChatAgent("http://127.0.0.1:9/v1", "m", few_shot=1, max_new_tokens=12)
    assert isinstance(agent.policy, LLMPolicy) and agent.style is agent.policy.style
    assert (agent.style.reply_format, agent.max_new_tokens) == ("action", 12)
    for bad in ({"temperature": -1}, {"top_p": 0}, {"max_new_tokens": 0}, {"seed": 1.5}):
        with pytest.raises((TypeError, ValueError)):
            LLMPolicy(**bad)
