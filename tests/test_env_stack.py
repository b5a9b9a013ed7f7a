"""The one budget regime and the one env-stack builder (agent_envs.env_stack)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import pytest

from agent_envs.arguments import Parser, UsageError, add_budget_arguments, budget_regime
from agent_envs.env_stack import BudgetRegime, StackOptions, StackRecipe, make_stack
from wrappers import BudgetMix, ChatHistory, TurnBudget
from wrappers.budget import find_budget

ENV_ID = "agent_envs/GuessNumber-v0"
ROOT = Path(__file__).resolve().parent.parent


def _names(env: gym.Env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def test_the_flags_parse_into_one_regime():
    parser = Parser(prog="demo")
    add_budget_arguments(parser, default=8)
    assert budget_regime(parser.parse_args([])) == BudgetRegime.fixed(8)
    mix = budget_regime(parser.parse_args(["--budget-mix", "4,8", "--weights", "1,3"]))
    assert mix == BudgetRegime.mixed((4, 8), (1.0, 3.0)) and mix.describe() == "BudgetMix{4,8}"
    shown = budget_regime(parser.parse_args(["--budget", "5", "--visible-budget"]))
    assert shown.visible and shown.budgets == (5,) and not shown.mix
    # A mix of one budget stays a mix: a BudgetMix wrapper, as --budget-mix 8 always built.
    assert budget_regime(parser.parse_args(["--budget-mix", "8"])).mix
    assert not budget_regime(parser.parse_args(["--budget-mix", "8"]), shared=False).shared
    with pytest.raises(UsageError, match="--weights goes with --budget-mix"):
        budget_regime(parser.parse_args(["--weights", "1"]))
    with pytest.raises(UsageError, match="--weights has 1 values"):
        budget_regime(parser.parse_args(["--budget-mix", "4,8", "--weights", "1"]))
    bare = Parser(prog="bare")
    add_budget_arguments(bare, default=None)
    assert budget_regime(bare.parse_args([])) is None


def test_a_regime_round_trips_through_json():
    regime = BudgetRegime((4, 8), (1.0, 2.0), visible=True, shared=False)
    assert BudgetRegime(**regime.to_json()) == regime
    # A mix of one budget (--budget-mix 8) stays a mix, not the fixed T=8.
    one = BudgetRegime.mixed([8])
    again = BudgetRegime(**one.to_json())
    assert again == one and again.mix and again.describe() == "BudgetMix{8}"
    assert BudgetRegime(**BudgetRegime.fixed(8).to_json()).describe() == "T=8"
    # Every other regime's JSON is as it was: mix follows from its fields.
    assert "mix" not in BudgetRegime.mixed([4, 8]).to_json()


def test_regime_checks_its_values():
    with pytest.raises(ValueError, match="fixed budget has one T"):
        BudgetRegime((4, 8), mix=False)
    with pytest.raises(ValueError, match="every budget must be an int >= 1, got 0"):
        BudgetRegime.fixed(0)
    with pytest.raises(TypeError, match="budgets must be a sequence of ints, got str"):
        BudgetRegime.mixed("4,8")
    assert BudgetRegime.mixed([4, 8], [1e308, 1e308]).draws.probabilities == (0.5, 0.5)


def test_a_regime_is_one_argument_a_budget_regime_or_an_int_t():
    from agent_envs.integrations.common import budgeted_env, masked_env

    given = budgeted_env(ENV_ID, 8)
    fixed = budgeted_env(ENV_ID, BudgetRegime.fixed(8))
    assert _names(given) == _names(fixed) and given.reset(seed=4) == fixed.reset(seed=4)
    masked = masked_env(ENV_ID, BudgetRegime.fixed(8))
    assert masked_env(ENV_ID, 8).action_space == masked.action_space
    with pytest.raises(TypeError, match="required positional argument: 'regime'"):
        budgeted_env(ENV_ID, budgets=[3, 5], visible=True)  # the old keywords are gone


def test_make_stack_builds_every_layer_in_one_order():
    options = StackOptions(
        task_ids=range(5, 9),
        process_reward=0.1,
        truncation_terminal=True,
        history=True,
        record="raw",
        hints=frozenset({"admissible_actions"}),
    )
    stack = make_stack(ENV_ID, BudgetRegime.mixed([2, 3], visible=True), options)
    assert _names(stack)[:6] == [
        "ActionHints",
        "ChatHistory",
        "TruncationIsTerminal",
        "ProcessReward",
        "BudgetMix",
        "TaskPool",
    ]
    budget = find_budget(stack)
    assert isinstance(budget, BudgetMix) and budget.visible
    _, info = stack.reset(seed=0)
    assert 5 <= info["task_id"] <= 8 and "Turns left" in info["messages"][-1]["content"]


def test_the_sb3_training_stack_is_the_builders():
    from baselines.sb3.env import TrainConfig, make_env

    config = TrainConfig(ENV_ID, budget_mix=(4, 8), weights=(1.0, 2.0), visible_budget=True)
    env = make_env(config)
    assert _names(env)[:3] == ["EncodeObservation", "DiscreteActions", "BudgetMix"]
    assert config.budget_regime() == BudgetRegime.mixed((4, 8), (1.0, 2.0), visible=True)


def test_an_eval_stack_resolves_its_budget_once(monkeypatch):
    """The chat stack of eval --history enters wrappers/budget.py once per stack (it was twice)."""
    import wrappers.budget
    from agent_envs.evaluation.stack import policy_stack, resolve_env

    calls = []
    find = wrappers.budget.find_budget
    monkeypatch.setattr(wrappers.budget, "find_budget", lambda *a: calls.append(1) or find(*a))
    recipe, name = resolve_env(StackRecipe(ENV_ID, StackOptions(history=True)), None)
    recipe = replace(recipe, regime=BudgetRegime.fixed(8))
    env = policy_stack(recipe, frozenset(), visible=False).build()
    assert len(calls) == 1 and name == ENV_ID
    assert isinstance(env, ChatHistory) and isinstance(env.env, TurnBudget)
    assert not env.env.report_budget
    with pytest.raises(ValueError, match="without a regime"):
        resolve_env(recipe, None)


def test_budget_mix_and_chat_stack_are_built_only_by_the_builder():
    """BudgetMix( and chat_stack( are called only in agent_envs/env_stack.py."""
    call = re.compile(r"(?<![\w.`])(?:\w+\.)?(BudgetMix|chat_stack)\(")
    found = []
    for package in ("agent_envs", "baselines"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#")[0]
                if call.search(code) and not code.lstrip().startswith((">>>", "class ", "def ")):
                    found.append(f"{path.relative_to(ROOT)}:{number}")
    assert [place.split(":")[0] for place in found] == ["agent_envs/env_stack.py"], found
