"""The project's contract in code: info and option keys, the oracle API, the policy.

This is the one module every layer above ``wrappers`` imports the contract
from.  It has two halves:

* **The env contract** (keys and the oracle API Protocols) is defined in
  :mod:`wrappers.protocol` and re-exported here unchanged.  It lives at the
  bottom because the generic wrappers write some of the keys and call the
  oracle API, and ``wrappers`` must never import ``agent_envs``.  Use the
  constants, never the strings: ``info[SUCCESS]``, ``options={TASK_ID: 3}``.
* **The policy contract** is defined here, because only the evaluator and the
  agents use it.

What a policy is, as the evaluator sees it.  A *compliant policy* is any
object with ``act(observation, info) -> str`` (:class:`Policy`), or a plain
callable ``f(observation) -> str``.  No base class is forced on anyone; the
Protocols below state the shape, in the manner of Stable-Baselines3's
``PolicyPredictor``.  Optional extras:

* ``act_batch(observations, infos) -> list[str]`` (:class:`BatchPolicy`): the
  evaluator then steps many episodes in lockstep and makes one call per turn
  for all of them.  A slot may hold an exception instead of an action: that
  episode alone is recorded as an error.  An exception *raised* by
  ``act_batch`` fails every episode of the call.
* ``visible_budget = True``, the policy's one budget flag: the agent sees the
  budget (it was trained under ``TurnBudget(visible=True)``, or it plans with
  the turns left), so the evaluator builds its stack with a visible budget
  (the turns left in every observation and in ``info``) and runs every budget
  separately.
* ``required_info = (ADMISSIBLE_ACTIONS, ORACLE_ACTIONS)``: the evaluator adds
  those lists to ``info`` (through ``wrappers.ActionHints``).  This is how the
  random and oracle baselines see the env's action API while
  ``act(observation, info)`` stays the only call.  ``ENV_ID`` adds the
  registered id of the env (LLM agents build few-shot examples from it).
* ``check_tasks(env, task_ids)``: called once before the run with the
  evaluator's env stack and its task ids; a ``ValueError`` it raises refuses
  the run (one line, nothing played).  LLM agents with few-shot examples
  refuse a task whose instance is an example's.

Every ``info`` the evaluator hands a policy also carries :data:`EPISODE_SEED`,
an int in ``[0, 2**32)`` derived from (base seed, task, attempt), and
:data:`TURN` (turns used so far).  A policy that samples should derive its
randomness from (``episode_seed``, ``turn``), so that attempts draw different
samples and the result does not depend on batching or episode order.
:data:`BUDGET` and :data:`TURNS_LEFT` are in ``info`` only when the budget is
visible (a visible ``TurnBudget``, or ``visible_budget = True``); with a hidden
budget the episode runs at max(T), so the evaluator never shows them, and a
policy that asks for them anyway gets one ``UserWarning`` per run saying so.

A stateful agent (one that remembers earlier turns of its episode) is passed
to the evaluator as a factory: a class, or
``agent_envs.evaluation.PerEpisode(factory)``, gets one fresh instance per
episode.  Any other object is shared by all episodes.

A policy may return an :class:`AgentAction` (a ``str``) whose ``raw`` holds the
unparsed text it generated; the evaluator stores ``raw`` in the transcript.
A policy that writes replies in a format of its own (LLM agents: ``"Action:
up"``) may say how with ``write_reply(action) -> str`` (:class:`ReplyWriter`):
step quality then shows it a reference trajectory's moves as the replies it
would have written, so that a dialogue-keeping agent (``ChatHistory(record=
"raw")``) reads the shared states in its own prompt format.

>>> from agent_envs.protocol import SUCCESS, Policy
>>> class Echo:
...     def act(self, observation, info):
...         return observation
>>> isinstance(Echo(), Policy), SUCCESS
(True, 'success')
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from wrappers.protocol import (
    ADMISSIBLE_ACTIONS,
    BUDGET,
    DEAD_END,
    ENV_ID,
    EPISODE_SEED,
    MESSAGES,
    ORACLE_ACTIONS,
    SUCCESS,
    TASK_ID,
    TURN,
    TURNS_LEFT,
    VALID_ACTION,
    ActionParser,
    ActionVocabulary,
    AdmissibleActions,
    BudgetAwareOracle,
    CompactView,
    Oracle,
    OracleEnv,
)

__all__ = [
    "ADMISSIBLE_ACTIONS",
    "BUDGET",
    "DEAD_END",
    "ENV_ID",
    "EPISODE_SEED",
    "MESSAGES",
    "ORACLE_ACTIONS",
    "REQUIRED_INFO_KEYS",
    "SUCCESS",
    "TASK_ID",
    "TURN",
    "TURNS_LEFT",
    "VALID_ACTION",
    "ActionParser",
    "ActionVocabulary",
    "AdmissibleActions",
    "AgentAction",
    "BatchPolicy",
    "BudgetAwareOracle",
    "CompactView",
    "Oracle",
    "OracleEnv",
    "Policy",
    "ReplyWriter",
]

#: The keys a policy may ask for in ``required_info``.
REQUIRED_INFO_KEYS = frozenset({ADMISSIBLE_ACTIONS, ORACLE_ACTIONS, ENV_ID})


@runtime_checkable
class Policy(Protocol):
    """An agent that maps the latest observation (and its info) to an action."""

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


@runtime_checkable
class BatchPolicy(Protocol):
    """An agent that acts for many concurrent episodes in one call."""

    def act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[str]: ...


class AgentAction(str):
    """An action string that also carries the raw text the agent generated.

    >>> action = AgentAction("up", raw="I should go up.\\nAction: up")
    >>> action == "up", action.raw.splitlines()[-1]
    (True, 'Action: up')
    """

    raw: str

    def __new__(cls, action: str, raw: str | None = None) -> AgentAction:
        instance = super().__new__(cls, action)
        instance.raw = action if raw is None else raw
        return instance

    def __reduce__(self):
        return (AgentAction, (str(self), self.raw))


@runtime_checkable
class ReplyWriter(Protocol):
    """An agent that can write any action as the reply it would have generated for it.

    ``write_reply(action)`` returns the text of a reply that plays ``action``
    (it parses back to ``action``), in the agent's own format.  Step quality
    replays a reference trajectory's moves as
    ``AgentAction(action, raw=write_reply(action))``, so that the dialogue a
    ``ChatHistory(record="raw")`` keeps is written as the agent writes.
    """

    def write_reply(self, action: str) -> str: ...
