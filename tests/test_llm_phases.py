"""train-llm's phases each take their own settings object, whole.

``LLMTrainConfig`` builds the model's source, the rollout's (with the policy's),
the warm start's and GRPO's settings once, and each checks its own values
without building a policy.
"""

from __future__ import annotations

import dataclasses

import pytest

from agent_envs.env_stack import BudgetRegime
from baselines.llm.models.model_source import ModelSource
from baselines.llm.training.train_config import (
    GRPOSettings,
    LLMTrainConfig,
    PolicySettings,
    RolloutSettings,
    WarmStartSettings,
)
from wrappers.errors import InvalidType, InvalidValue

GUESS = "agent_envs/GuessNumber-v0"

#: Every value differs from its default, so a share that read the wrong field shows.
CONFIG = LLMTrainConfig(
    env_id=GUESS,
    budget=BudgetRegime.fixed(6),
    model="some/folder",
    tasks=(3, 4, 5),
    k=4,
    tasks_per_step=2,
    steps=7,
    learning_rate=1e-3,
    warm_start=9,
    warm_start_episodes=2,
    warm_start_epsilon=0.5,
    warm_start_lr=2e-2,
    process_reward=0.3,
    seed=11,
    max_new_tokens=12,
    temperature=0.7,
    context=512,
    micro_batch=4,
    beta=0.1,
    collapse_invalid=0.8,
)


def test_each_phase_gets_its_settings_object():
    assert CONFIG.source == ModelSource("some/folder", GUESS, 11, 512)
    assert CONFIG.warm == WarmStartSettings(
        steps=9, episodes=2, epsilon=0.5, learning_rate=2e-2, tasks=(3, 4, 5), seed=11
    )
    assert CONFIG.grpo == GRPOSettings(
        steps=7, k=4, tasks_per_step=2, micro_batch=4, learning_rate=1e-3, max_new_tokens=12,
        beta=0.1, process_reward=0.3, collapse_invalid=0.8,
        tasks=(3, 4, 5), seed=11,
    )  # fmt: skip
    assert CONFIG.grpo.episodes == 8
    policy = PolicySettings(temperature=0.7, max_new_tokens=12)
    assert CONFIG.policy == policy
    assert CONFIG.rollout == RolloutSettings(GUESS, BudgetRegime.fixed(6), policy, 11, True)
    assert CONFIG.rollout.policy is CONFIG.policy  # training and evaluation prompt alike


def test_the_record_is_flat_and_its_json_holds_no_phase():
    """The phases are built from the record; ``train_llm.json`` keeps the flags' fields only."""
    data = CONFIG.to_json()
    assert not {"source", "policy", "rollout", "warm", "grpo"} & set(data)
    assert data["tasks"] == [3, 4, 5] and data["budget"]["budgets"] == [6]
    changed = dataclasses.replace(CONFIG, k=2, temperature=0.5)
    assert changed.grpo.k == 2 and changed.rollout.policy.temperature == 0.5


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"k": 1}, InvalidValue, "k must be >= 2"),
        ({"tasks": ()}, InvalidValue, "tasks must not be empty"),
        ({"micro_batch": 3}, InvalidValue, "micro_batch must divide the 8 episodes"),
        ({"few_shot": 99}, InvalidValue, "few_shot"),
        ({"reply_format": "json"}, InvalidValue, "reply_format must be one of"),
        ({"system_prompt": 3}, InvalidType, "system_prompt must be a str or None"),
        ({"temperature": 0.0}, InvalidValue, "temperature"),
        ({"context": 0}, InvalidValue, "context"),
        ({"warm_start_epsilon": 1.5}, InvalidValue, "warm_start_epsilon"),
        ({"seed": -1}, InvalidValue, "seed"),
    ],
)
def test_each_settings_object_refuses_its_own_bad_values(change, error, message):
    with pytest.raises(error, match=message):
        dataclasses.replace(CONFIG, **change)
