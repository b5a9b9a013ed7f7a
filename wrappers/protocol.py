"""The env contract in code: the info and option keys, and the oracle API as Protocols.

Where this lives, and why.  The layering is ``baselines -> agent_envs ->
wrappers``, and a lower layer never names a higher one.  The keys are written
by both lower layers (``agent_envs`` envs write ``task_id`` and ``success``;
``wrappers`` write ``budget``, ``turn`` and ``oracle_actions``), and the
generic wrappers call the oracle API on ``env.unwrapped``.  So the contract
lives here, at the bottom, in a module that imports nothing but ``typing``,
and every layer imports it from here.  The policy contract, which only the
layers above ``wrappers`` use, is the ``protocol`` module of ``agent_envs``.

A key is spelled once, as a constant below, and every module uses the
constant, never the string.

>>> from wrappers.protocol import SUCCESS, Oracle
>>> SUCCESS
'success'
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ADMISSIBLE_ACTIONS",
    "BUDGET",
    "DEAD_END",
    "ENV_ID",
    "EPISODE_SEED",
    "MESSAGES",
    "ORACLE_ACTIONS",
    "SUCCESS",
    "TASK_ID",
    "TURN",
    "TURNS_LEFT",
    "VALID_ACTION",
    "ActionParser",
    "ActionVocabulary",
    "AdmissibleActions",
    "BudgetAwareOracle",
    "CompactView",
    "Oracle",
    "OracleEnv",
]

# ------------------------------------------------------------------ info keys
# Written by every agent_envs env, on reset and on every step.
#: int: the task being played.  Also the ``reset`` option that picks the task.
TASK_ID = "task_id"
#: bool: the task has been solved.
SUCCESS = "success"
#: bool: the last action was parsed and legal (steps only).
VALID_ACTION = "valid_action"
#: bool: success is no longer reachable (steps only).
DEAD_END = "dead_end"

# Written by TurnBudget / BudgetMix.
#: int: the episode's turn budget T.  Also the ``reset`` option that sets T.
BUDGET = "budget"
#: int: turns used so far.
TURN = "turn"
#: int: turns left (T - turn, never below 0).
TURNS_LEFT = "turns_left"

# Written by ActionHints (the names of the oracle API methods they come from).
#: list[str]: the legal actions now.
ADMISSIBLE_ACTIONS = "admissible_actions"
#: list[str]: the actions on some optimal path to success; empty in a dead end.
ORACLE_ACTIONS = "oracle_actions"
#: str: the registered id of the env being played (its spec's id), for agents
#: that prepare per env, such as few-shot examples played by the env's oracle.
ENV_ID = "registered_id"

# Written by ChatHistory.
#: list[dict]: the dialogue so far as chat messages (``role``, ``content``).
MESSAGES = "messages"

# Written by the evaluator (and by any loop that wants seeded policies).
#: int in [0, 2**32): the seed of this attempt, derived from (base seed, task, attempt).
EPISODE_SEED = "episode_seed"


# ------------------------------------------------------------------ oracle API
# Methods on the unwrapped env, computed on demand so that step stays fast.
# Each wrapper checks with isinstance(env.unwrapped, <Protocol>) only for the
# part it calls, so an env may implement any subset.
@runtime_checkable
class AdmissibleActions(Protocol):
    """An env that lists its legal actions (``ShowActions``, ``DiscreteActions`` masks)."""

    def admissible_actions(self) -> list[str]:
        """Return the legal actions in the current state."""
        ...


@runtime_checkable
class Oracle(Protocol):
    """An env that knows an optimal path to success (``ActionHints``, ``ProcessReward``).

    For a stochastic env, the env's docstring says what "optimal" means.
    """

    def oracle_actions(self) -> list[str]:
        """Return the actions on some optimal path to success; empty in a dead end."""
        ...

    def oracle_turns(self) -> int | None:
        """Return the fewest turns to success from now, or ``None`` if unreachable."""
        ...


@runtime_checkable
class BudgetAwareOracle(Protocol):
    """An env whose oracle plans for the turns left (``TurnBudget`` and ``BudgetMix`` tell it).

    ``set_turns_left(None)`` means no budget; a reset forgets the value.
    """

    def set_turns_left(self, turns_left: int | None) -> None:
        """Plan the oracle for ``turns_left`` more turns (``None``: no budget)."""
        ...


@runtime_checkable
class ActionVocabulary(Protocol):
    """An env with a fixed, finite list of canonical actions (``None`` where it is open)."""

    action_vocabulary: tuple[str, ...] | None


@runtime_checkable
class ActionParser(Protocol):
    """An env that says which move an action text means, so spellings can be compared.

    ``parse_action("guess 50")`` and ``parse_action("50")`` return equal moves
    when the env reads them as the same move.  A pure function of the text.
    """

    def parse_action(self, action: str) -> Any | None:
        """Return the move ``action`` means (any comparable value), or ``None``."""
        ...


@runtime_checkable
class CompactView(Protocol):
    """An env that names the part of its text an array encoder needs.

    ``compact_view()`` returns ``TextEncoder`` settings for ``mode="chars"``
    (``view_only``, ``keep``, ``max_length``, ``charset``, ``feedback_length``):
    the few characters that carry the state (FrozenLake's ``FHSG@``), where
    they sit, and how long the view can be.  Encoders and training defaults
    use it instead of the whole printable charset of a long observation, so
    that a user need not pass a charset.  Optional: an env without it is
    encoded whole.
    """

    def compact_view(self) -> dict[str, Any]:
        """Return the ``TextEncoder`` settings (without ``mode``) of the compact view."""
        ...


@runtime_checkable
class OracleEnv(AdmissibleActions, Oracle, ActionVocabulary, ActionParser, Protocol):
    """The whole action and oracle API that every ``agent_envs`` env implements."""
