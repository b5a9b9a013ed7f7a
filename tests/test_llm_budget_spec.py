"""train-llm's budget spec keeps what the budget flags said: a fixed T or a BudgetMix.

``--budget-mix 8`` is a mix of one budget, not the fixed ``--budget 8``: its
run is named, and its training line printed, as the mix.
"""

from __future__ import annotations

from agent_envs.env_stack import BudgetRegime
from baselines.llm.budget_spec import BudgetSpec
from baselines.llm.train import COMMAND

GUESS = "agent_envs/GuessNumber-v0"


def _run_name(*flags: str) -> str:
    """Return the run folder's name that ``train-llm GUESS *flags`` picks."""
    args = COMMAND.parse([GUESS, *flags])
    folder, _ = COMMAND.run_layout(args, COMMAND.configs(args))
    return folder.name


def test_a_mix_of_one_budget_stays_a_mix():
    spec = BudgetSpec.from_regime(BudgetRegime.mixed([8]))
    assert spec.mix and spec.describe() == "BudgetMix{8}"
    assert BudgetSpec.from_regime(BudgetRegime.fixed(8)).describe() == "T=8"


def test_budget_mix_of_one_budget_names_its_run_as_the_mix():
    assert _run_name("--budget-mix", "8") == "GuessNumber-v0-BudgetMix{8}-seed0"
    assert _run_name("--budget", "8") == "GuessNumber-v0-T=8-seed0"
    assert _run_name("--budget-mix", "4,8", "--seed", "2") == "GuessNumber-v0-BudgetMix{4,8}-seed2"


def test_sharing_and_visibility_survive_the_spec():
    regime = BudgetRegime.mixed([4, 8], [1, 3], visible=True)
    spec = BudgetSpec.from_regime(regime, shared=False)
    assert (spec.budgets, spec.weights, spec.visible, spec.shared) == (
        regime.budgets,
        regime.weights,
        True,
        False,
    )
