"""A maskable model is never silently unmasked."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO

from baselines.sb3.agent import SB3Agent
from baselines.sb3.env import stack_settings
from tests.sb3_fixtures import CorridorEnv
from wrappers import DiscreteActions, EncodeObservation, TurnBudget

ENCODING = {"mode": "chars", "view_only": True, "charset": "#.@G", "max_length": 10}


@pytest.fixture(scope="module")
def maskable_model():
    env = EncodeObservation(DiscreteActions(TurnBudget(CorridorEnv(length=8), 12)), **ENCODING)
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
    return model, env


@pytest.mark.parametrize("settings", ["env", "dict"])
def test_from_model_on_a_maskable_model_acts_masked(maskable_model, settings):
    """``stack_settings``'s default (no masks) must not switch a MaskablePPO's masks off."""
    model, env = maskable_model
    stack = stack_settings(env)
    assert stack["action_masks"] is False  # the default the user fell into
    agent = SB3Agent.from_model(model, env if settings == "env" else stack)
    assert agent.masked and agent.required_info == ("admissible_actions",)
    assert agent.settings["action_masks"] is True
    text_env = CorridorEnv(length=8)
    for task_id in range(30):
        text, _ = text_env.reset(seed=0, options={"task_id": task_id})
        admissible = text_env.admissible_actions()
        # "wait" is in the vocabulary but never admissible: only a mask keeps it out.
        assert agent.act(text, {"admissible_actions": admissible}) in admissible


def test_a_maskable_model_without_admissible_actions_refuses_in_one_line(maskable_model):
    model, env = maskable_model
    agent = SB3Agent.from_model(model, stack_settings(env))
    with pytest.raises(KeyError, match="trained with action masks") as caught:
        agent.act("#..@...G#", {})
    assert "\n" not in str(caught.value)
