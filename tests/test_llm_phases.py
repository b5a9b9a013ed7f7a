"""train-llm's phases each take their own share of the settings.

``train_llm`` resolves the model's source, the rollout's, the warm start's and
GRPO's settings from ``LLMTrainConfig`` once.
"""

from __future__ import annotations

from baselines.llm.budget_spec import BudgetSpec
from baselines.llm.model_source import ModelSource
from baselines.llm.train_config import GRPOSettings, LLMTrainConfig, WarmStartSettings

GUESS = "agent_envs/GuessNumber-v0"

#: Every value differs from its default, so a share that read the wrong field shows.
CONFIG = LLMTrainConfig(
    env_id=GUESS,
    budget=BudgetSpec.fixed(6),
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


def test_each_phase_gets_its_share_of_the_settings():
    assert CONFIG.model_source() == ModelSource("some/folder", GUESS, 11, 512)
    assert CONFIG.warm_start_settings() == WarmStartSettings(9, 2, 0.5, 2e-2, (3, 4, 5), 11)
    grpo = CONFIG.grpo_settings()
    assert grpo == GRPOSettings(7, 4, 2, 4, 1e-3, 0.7, 12, 0.1, 0.3, 0.8, (3, 4, 5), 11)
    assert grpo.episodes == 8
    assert CONFIG.rollout_settings() == dict(
        env_id=GUESS,
        budget=BudgetSpec.fixed(6),
        seed=11,
        process_reward=True,
        **CONFIG.policy_settings(),
    )
