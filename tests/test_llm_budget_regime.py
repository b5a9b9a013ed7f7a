"""train-llm's budget regime keeps what the budget flags said: a fixed T or a BudgetMix.

``--budget-mix 8`` is a mix of one budget, not the fixed ``--budget 8``: its
run is named, and its training line printed, as the mix.
"""

from __future__ import annotations

from agent_envs.env_stack import BudgetRegime
from baselines.llm.training.train import COMMAND

GUESS = "agent_envs/GuessNumber-v0"


def _run_name(*flags: str) -> str:
    """Return the run folder's name that ``train-llm GUESS *flags`` picks."""
    args = COMMAND.parse([GUESS, *flags])
    folder, _ = COMMAND.run_layout(args, COMMAND.configs(args))
    return folder.name


def _regime(*flags: str) -> BudgetRegime:
    """Return the budget regime that ``train-llm GUESS *flags`` trains under."""
    args = COMMAND.parse([GUESS, *flags])
    return COMMAND.configs(args)[0].budget


def test_a_mix_of_one_budget_stays_a_mix():
    regime = _regime("--budget-mix", "8")
    assert regime.mix and regime.describe() == "BudgetMix{8}"
    assert _regime("--budget", "8").describe() == "T=8" == _regime().describe()


def test_budget_mix_of_one_budget_names_its_run_as_the_mix():
    assert _run_name("--budget-mix", "8") == "GuessNumber-v0-BudgetMix{8}-seed0"
    assert _run_name("--budget", "8") == "GuessNumber-v0-T=8-seed0"
    assert _run_name("--budget-mix", "4,8", "--seed", "2") == "GuessNumber-v0-BudgetMix{4,8}-seed2"


def test_sharing_and_visibility_come_from_the_flags():
    flags = ("--budget-mix", "4,8", "--weights", "1,3", "--visible-budget")
    assert _regime(*flags, "--independent-budgets") == BudgetRegime.mixed(
        [4, 8], [1, 3], visible=True, shared=False
    )
    assert _regime(*flags).shared and not _regime("--independent-budgets").shared
