"""KnowledgeSearch's own rules: the knowledge base, the tools, answers and the oracle."""

from __future__ import annotations

import itertools
import pickle

import gymnasium as gym
import numpy as np
import pytest

from agent_envs.envs.knowledge_search import KnowledgeSearchEnv
from agent_envs.envs.knowledge_search.knowledge_base import normalize_answer

HOPS = {"agent_envs/KnowledgeSearch-v0": {2}, "agent_envs/KnowledgeSearch-Deep-v0": {3, 4}}


def fresh(task_id: int, min_hops: int = 2, max_hops: int = 2) -> KnowledgeSearchEnv:
    env = KnowledgeSearchEnv(min_hops=min_hops, max_hops=max_hops)
    env.reset(seed=0, options={"task_id": task_id})
    return env


@pytest.mark.parametrize("env_id", sorted(HOPS))
def test_hop_count_per_id(env_id):
    env = gym.make(env_id).unwrapped
    hops = set()
    for task_id in range(60):
        env.reset(seed=0, options={"task_id": task_id})
        hops.add(env.task.hops)
        assert env.oracle_turns() == env.task.hops + 1
    assert hops == HOPS[env_id]


@pytest.mark.parametrize("task_id", range(30))
def test_knowledge_base_invariants(task_id):
    task = fresh(task_id, 2, 4).task
    normalized = [normalize_answer(name) for name in task.names]
    assert len(set(normalized)) == len(task.names)  # every name finds one page
    assert normalized == [name.lower() for name in task.names]
    assert 25 <= len(task.names) <= 34
    chain = task.chain
    assert len(set(chain)) == len(chain)
    assert task.names[chain[0]] in task.question
    assert task.names[chain[-1]] not in task.question
    for here, there in itertools.pairwise(chain):
        # Each page on the chain names the next entity.
        assert there in task.mentions[here]
        assert task.names[there] in task.pages[here]


def test_normalize_answer():
    assert normalize_answer("  The  Velkor-Labs! ") == "velkorlabs"
    assert normalize_answer("a an the") == ""
    assert normalize_answer("Rindor") == normalize_answer("rindor.")


def test_search_shows_the_page_whatever_the_case():
    env = fresh(0)
    task = env.task
    start = task.chain[0]
    observation, reward, terminated, _, info = env.step(f"SEARCH [ the {task.names[start]}. ]")
    assert info["valid_action"] is True and (reward, terminated) == (0.0, False)
    assert task.pages[start] in observation
    assert observation.endswith(f"Question: {task.question}")


def test_inexact_name_returns_the_closest_matches():
    env = fresh(1)
    task = env.task
    target = task.chain[1]
    name = task.names[target]
    typo = name[:-2] + name[-1] if " " not in name[-3:] else name[1:]
    observation, _, _, _, info = env.step(f"search[{typo}]")
    assert info["valid_action"] is True
    assert "Closest names:" in observation
    assert task.closest(typo)[0] == target
    assert observation.split("Closest names: ")[1].startswith(name)
    # A listed name becomes answerable from the admissible list.
    assert f"answer[{name}]" in env.admissible_actions()
    observation, _, _, _, info = env.step("search[qqqqqq]")
    assert info["valid_action"] is True and "No entity matches" in observation


@pytest.mark.parametrize("task_id", range(10))
def test_correct_answer_with_loose_formatting_succeeds(task_id):
    env = fresh(task_id, 3, 4)
    answer = env.task.names[env.task.chain[-1]]
    _, reward, terminated, _, info = env.step(f"Action: answer[ THE {answer.upper()}!]")
    assert (reward, terminated, info["success"], info["dead_end"]) == (1.0, True, True, False)
    assert env.oracle_turns() == 0 and env.oracle_actions() == []


def test_wrong_answer_is_a_terminal_failure():
    env = fresh(2)
    task = env.task
    wrong = task.names[task.chain[0]]
    observation, reward, terminated, _, info = env.step(f"answer[{wrong}]")
    assert (reward, terminated, info["success"], info["dead_end"]) == (0.0, True, False, True)
    assert "Wrong answer" in observation
    assert env.oracle_turns() is None and env.oracle_actions() == []
    assert env.admissible_actions() == []
    assert env.step(f"search[{wrong}]")[-1]["valid_action"] is False


@pytest.mark.parametrize("action", ["search[]", "answer[  ]", "search Rindor", "answer: x", "look"])
def test_malformed_tools_are_invalid(action):
    env = fresh(3)
    _, _, terminated, _, info = env.step(action)
    assert info["valid_action"] is False and terminated is False
    assert env.oracle_turns() == 3


def test_oracle_counts_the_chain_pages_not_yet_opened():
    env = fresh(4, 3, 3)
    task = env.task
    assert env.oracle_turns() == 4
    off_chain = next(e for e in range(len(task.names)) if e not in task.chain)
    env.step(f"search[{task.names[off_chain]}]")
    assert env.oracle_turns() == 4  # reading an unrelated page does not help
    env.step(f"search[{task.names[task.chain[2]]}]")  # out of order, by luck
    assert env.oracle_turns() == 3
    assert env.oracle_actions() == [f"search[{task.names[task.chain[0]]}]"]
    env.step(f"search[{task.names[task.chain[0]]}]")
    env.step(f"search[{task.names[task.chain[0]]}]")  # opening a page twice gains nothing
    assert env.oracle_turns() == 2
    env.step(env.oracle_actions()[0])
    assert env.oracle_actions() == [f"answer[{task.names[task.chain[-1]]}]"]
    assert env.step(env.oracle_actions()[0])[-1]["success"] is True


@pytest.mark.parametrize("task_id", range(5))
def test_every_admissible_action_is_valid(task_id):
    env = fresh(task_id, 3, 4)
    rng = np.random.default_rng(task_id)
    for _ in range(6):
        legal = env.admissible_actions()
        assert set(env.oracle_actions()) <= set(legal)
        for action in legal:
            clone = pickle.loads(pickle.dumps(env))
            assert clone.step(action)[-1]["valid_action"] is True, action
        searches = [a for a in legal if a.startswith("search[")]
        env.step(searches[int(rng.integers(len(searches)))])


def test_constructor_validates_arguments():
    with pytest.raises(ValueError, match="min_hops"):
        KnowledgeSearchEnv(min_hops=3, max_hops=2)
    with pytest.raises(ValueError, match="max_hops"):
        KnowledgeSearchEnv(min_hops=1, max_hops=5)
    with pytest.raises(TypeError, match="min_hops"):
        KnowledgeSearchEnv(min_hops="2")  # type: ignore[arg-type]
    assert KnowledgeSearchEnv().action_vocabulary is None
