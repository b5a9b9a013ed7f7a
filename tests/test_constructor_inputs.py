"""Bad arguments to the wrappers, the encoder and ``gym.make`` are one typed, one-line error.

The Python counterpart of the commands' one-line errors: a researcher who
passes a wrong value gets :class:`~wrappers.errors.InvalidValue` or
:class:`~wrappers.errors.InvalidType` (the user-error types, which the
commands report as one line with exit status 2), naming the argument, at
once.  Several of these raised a plain ``ValueError`` or ``TypeError`` (the
type the commands treat as a bug, with a traceback), silently coerced a
value (``TaskPool`` read task id ``2.7`` as ``2``), or allocated without
bound (``max_number=10**12`` took the machine's memory, ``max_length=10**12``
a ``MemoryError`` from numpy).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import agent_envs  # noqa: F401  (registers the ids)
from agent_envs.envs.frozen_lake.env import LakeTask
from agent_envs.envs.sokoban.rooms import SokobanTask
from wrappers import (
    BudgetMix,
    ChatHistory,
    DiscreteActions,
    EncodeObservation,
    TaskPool,
    TextEncoder,
    TurnBudget,
)
from wrappers.errors import InvalidType, InvalidValue

LAKE = "agent_envs/FrozenLake-v0"
GUESS = "agent_envs/GuessNumber-v0"


def lake() -> gym.Env:
    return gym.make(LAKE)


WRAPPER_CASES = [
    (lambda: BudgetMix(lake(), []), InvalidValue, "budgets must not be empty"),
    (lambda: BudgetMix(lake(), 5), InvalidType, "budgets must be a sequence of ints"),
    (lambda: ChatHistory(lake(), record="x"), InvalidValue, "record must be one of"),
    (lambda: ChatHistory(lake(), system_prompt=3), InvalidType, "system_prompt must be a str"),
    (lambda: EncodeObservation(lake(), mode="x"), InvalidValue, "mode must be one of"),
    (lambda: EncodeObservation(lake(), keep="x"), InvalidValue, "keep must be 'tail' or 'head'"),
    (lambda: EncodeObservation(lake(), layout="x"), InvalidValue, "layout must be one of"),
    (
        lambda: EncodeObservation(lake(), max_length=10**12),
        InvalidValue,
        "max_length must be at most 1,000,000",
    ),
    (
        lambda: EncodeObservation(lake(), mode="hashing", dim=10**12),
        InvalidValue,
        "dim must be at most 1,000,000",
    ),
    (
        lambda: EncodeObservation(lake(), feedback_length=10**12),
        InvalidValue,
        "feedback_length must be at most 1,000,000",
    ),
    (
        lambda: TurnBudget(gym.make(LAKE, max_episode_steps=3), 5),
        InvalidValue,
        "A turn budget of 5 cannot work",
    ),
    (
        lambda: DiscreteActions(gym.make("agent_envs/KnowledgeSearch-v0")),
        InvalidValue,
        "has no action_vocabulary",
    ),
    (lambda: TaskPool(lake(), []), InvalidValue, "task_ids must be non-empty"),
    (lambda: TaskPool(lake(), [2.7]), InvalidType, "every task id must be an int"),
    (lambda: TaskPool(lake(), ["3"]), InvalidType, "every task id must be an int"),
    (lambda: TaskPool(lake(), [True]), InvalidType, "every task id must be an int"),
]


@pytest.mark.parametrize(("build", "error", "message"), WRAPPER_CASES)
def test_a_bad_wrapper_argument_is_a_typed_one_line_error(build, error, message):
    with pytest.raises(error, match=message) as refused:
        build()
    assert "\n" not in str(refused.value)


def test_a_bad_step_index_is_a_typed_error():
    env = DiscreteActions(lake())
    env.reset(seed=0)
    with pytest.raises(InvalidValue, match="index"):
        env.step(99)
    with pytest.raises(InvalidType, match="integer index"):
        env.step("up")


@pytest.mark.parametrize(
    ("config", "error", "message"),
    [
        ({"mode": "x"}, InvalidValue, "mode must be one of"),
        ({"mode": "chars"}, InvalidValue, "needs charset"),
        # A hand-edited sidecar: tuple(3) used to raise a bare TypeError.
        ({"mode": "hashing", "ngram_range": 3}, InvalidValue, r"ngram_range must be \(low, high\)"),
        ({"mode": "chars", "charset": "ab", "size": 3}, InvalidValue, "Unknown encoder settings"),
        ({"mode": "chars", "charset": "ab", "max_length": 10**12}, InvalidValue, "at most"),
        ("chars", InvalidValue, "An encoder config is a dict"),
    ],
)
def test_a_bad_saved_encoder_config_is_a_typed_error(config, error, message):
    """What SB3Agent rebuilds from a model's sidecar, a file a user may have edited."""
    with pytest.raises(error, match=message):
        TextEncoder.from_config(config)


ENV_CASES = [
    # 10**12 built a tuple of 10**12 guesses: the test process ran out of memory.
    (GUESS, {"max_number": 10**12}, InvalidValue, "max_number must be at most 1,000,000"),
    (
        "agent_envs/GuessNumber-Range-v0",
        {"max_low": 10**12},
        InvalidValue,
        "max_low \\+ max_width - 1 must be at most 1,000,000",
    ),
    (GUESS, {"terse": 1}, InvalidType, "terse must be a bool"),
    (GUESS, {"render_mode": "x"}, InvalidValue, "render_mode must be one of"),
    ("agent_envs/Household-v0", {"size": "huge"}, InvalidValue, "size must be one of"),
    ("agent_envs/Household-v0", {"size": []}, InvalidValue, "size must be one of"),
    ("agent_envs/WebShop-v0", {"min_products": 0}, InvalidValue, "min_products"),
    ("agent_envs/KnowledgeSearch-v0", {"min_hops": 0}, InvalidValue, "min_hops"),
]


@pytest.mark.parametrize(("env_id", "kwargs", "error", "message"), ENV_CASES)
def test_a_bad_gym_make_kwarg_is_a_typed_error(env_id, kwargs, error, message):
    with pytest.raises(error, match=message):
        gym.make(env_id, **kwargs)


def test_the_largest_guess_range_still_builds():
    env = gym.make(GUESS, max_number=1_000_000)
    observation, _ = env.reset(seed=0)
    assert "1000000" in observation


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: LakeTask.from_rows(["SX", "FG"]), "square map of S, F, H, G"),
        (lambda: LakeTask.from_rows(["SH", "HG"]), "unreachable"),
        (lambda: SokobanTask.from_text("###"), "A room must be"),
    ],
)
def test_a_bad_hand_made_task_is_a_typed_error(build, message):
    with pytest.raises(InvalidValue, match=message):
        build()


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"timesteps": -5}, InvalidValue, "timesteps must be an int >= 0"),
        ({"timesteps": float("nan")}, InvalidType, "timesteps must be an int"),
        ({"gamma": 2.0}, InvalidValue, "gamma must be a number in"),
        ({"seed": True}, InvalidType, "seed must be an int"),
        ({"seed": -1}, InvalidValue, "seed must be an int >= 0"),
        ({"n_envs": 0}, InvalidValue, "n_envs must be an int in"),
        ({"n_envs": 10**6}, InvalidValue, "n_envs must be an int in"),
        ({"budget": 0}, InvalidValue, "must be an int >= 1"),
        ({"budget_mix": ()}, InvalidValue, "budgets must not be empty"),
        ({"algo": "sac"}, InvalidValue, "algo must be one of"),
        ({"process_reward": float("nan")}, InvalidValue, "process_reward must be"),
        ({"bc_epsilon": 1.5}, InvalidValue, "bc_epsilon must be"),
        ({"vec": "threads"}, InvalidValue, "vec must be 'dummy' or 'subproc'"),
        ({"net_arch": (64, 0)}, InvalidValue, "every net_arch width must be an int >= 1"),
        ({"budget_feature": True}, InvalidValue, "budget_feature needs visible_budget=True"),
    ],
)
def test_a_bad_sb3_train_config_is_refused_when_built(change, error, message):
    """TrainConfig took every value as given: timesteps=-5 or gamma=2.0 reached SB3."""
    from baselines.sb3.env import TrainConfig

    with pytest.raises(error, match=message):
        TrainConfig(GUESS, **change)


def test_a_good_sb3_train_config_is_built_as_before():
    from baselines.sb3.env import TrainConfig

    config = TrainConfig(GUESS, budget_mix=(5, 10), weights=(1.0, 2.0), process_reward=0.1)
    assert config.budget_regime().budgets == (5, 10) and config.timesteps >= 1
