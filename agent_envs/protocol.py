"""The policy contract in code: the shape of a policy, as the evaluator sees it.

:class:`Policy` and :class:`BatchPolicy` are ``typing.Protocol`` classes (no
base class to inherit), :data:`REQUIRED_INFO_KEYS` the keys a policy may ask
for in ``required_info``, :class:`AgentAction` an action that keeps the text
the agent generated, :class:`ReplyWriter` an agent that writes any action as
its own reply.  What the evaluator does with each is explained in
``docs/evaluation.md`` (Policies).  The env contract, the info and option keys
and the oracle API, is :mod:`wrappers.protocol`.

>>> from agent_envs.protocol import Policy
>>> class Echo:
...     def act(self, observation, info):
...         return observation
>>> isinstance(Echo(), Policy)
True
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from wrappers import protocol as _env_contract

__all__ = ["REQUIRED_INFO_KEYS", "AgentAction", "BatchPolicy", "Policy", "ReplyWriter"]

#: The keys a policy may ask for in ``required_info``.
REQUIRED_INFO_KEYS = frozenset(
    {_env_contract.ADMISSIBLE_ACTIONS, _env_contract.ORACLE_ACTIONS, _env_contract.ENV_ID}
)


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

    An agent that can count its tokens says what this one reply cost:
    ``tokens_read``, the length of the prompt it was conditioned on (a prefix
    the model had cached counts too), and ``tokens_generated``, the reply's
    length.  The evaluator sums them per episode; ``None`` means not counted.

    >>> action = AgentAction("up", raw="I should go up.\\nAction: up", tokens_generated=9)
    >>> action == "up", action.raw.splitlines()[-1], action.tokens_read, action.tokens_generated
    (True, 'Action: up', None, 9)
    """

    raw: str
    tokens_read: int | None
    tokens_generated: int | None

    def __new__(
        cls,
        action: str,
        raw: str | None = None,
        tokens_read: int | None = None,
        tokens_generated: int | None = None,
    ) -> AgentAction:
        instance = super().__new__(cls, action)
        instance.raw = action if raw is None else raw
        instance.tokens_read = tokens_read
        instance.tokens_generated = tokens_generated
        return instance

    def __reduce__(self):
        return (AgentAction, (str(self), self.raw, self.tokens_read, self.tokens_generated))


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
