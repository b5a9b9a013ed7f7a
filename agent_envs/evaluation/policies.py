"""Turn any compliant policy into the two calls the evaluator makes.

The evaluator accepts four shapes of policy (see ``agent_envs.protocol``):

* an object with ``act(observation, info) -> str`` (and maybe ``act_batch``),
  shared by every episode;
* a class, or :class:`PerEpisode` around any other factory: a fresh instance
  per episode, for agents that keep state within an episode;
* an object with only ``act_batch``;
* a plain callable that is not a class, called as ``f(observation) -> str``.

An ``agent_envs.plugins.AgentSpec`` (a spec and kwargs) is built into one of
these first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent_envs import fingerprint
from agent_envs.plugins import AgentSpec
from agent_envs.protocol import REQUIRED_INFO_KEYS
from agent_envs.redaction import scrub
from wrappers.errors import InvalidValue

__all__ = [
    "POLICY_ERRORS",
    "PerEpisode",
    "PolicyAdapter",
    "adapt_policy",
    "describe_error",
    "safe_repr",
]

#: What a policy may raise that ends only its episode.  ``SystemExit`` too: an
#: agent (or a library under it) calling ``sys.exit`` must not end the whole
#: run silently; ``KeyboardInterrupt`` still stops the run.
POLICY_ERRORS = (Exception, SystemExit)

Actor = Callable[[str, dict[str, Any]], Any]


class PerEpisode:
    """Mark ``factory`` as building one fresh policy per episode.

    A class passed to ``evaluate`` is already treated this way; use this marker
    for any other factory, such as ``functools.partial(MyAgent, temperature=0.7)``.
    The factory is called once more up front to read ``required_info`` and
    ``visible_budget`` from an instance.

    >>> from agent_envs.evaluation import PerEpisode
    >>> marker = PerEpisode(dict)
    >>> marker.factory is dict
    True
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        if not callable(factory):
            raise TypeError(f"PerEpisode needs a callable factory, got {type(factory).__name__}.")
        self.factory = factory

    def __repr__(self) -> str:
        return f"PerEpisode({self.factory!r})"


def safe_repr(value: Any, limit: int = 80) -> str:
    """Return ``repr(value)`` cut to ``limit`` characters, or its type if ``repr`` raises."""
    try:
        text = repr(value)
    except Exception:  # a policy's object: its repr may be broken
        return f"<{type(value).__name__} whose repr raised>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_error(exc: BaseException, limit: int = 500) -> str:
    """Return ``"Type: message"`` for ``exc``, secrets masked, then cut to ``limit`` characters.

    The secrets go first (:func:`agent_envs.redaction.scrub`), so that a cut
    never leaves part of one behind; an exception whose ``str`` raises is
    described by its type.
    """
    try:
        message = str(exc)
    except Exception:
        message = "(its message could not be read)"
    text = scrub(f"{type(exc).__name__}: {message}")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _qualified_name(obj: Any) -> str:
    """Return ``module:QualName``; for an instance with its own ``repr``, ``module:repr``.

    The repr carries the agent's settings (``NoisyOracleAgent(epsilon=0.4, ...)``),
    so that a run log refuses to mix two differently configured agents.  The
    default ``object`` repr holds a memory address and is never used.
    """
    named = isinstance(obj, type) or (callable(obj) and hasattr(obj, "__qualname__"))
    target = obj if named else type(obj)
    module = getattr(target, "__module__", None) or "?"
    if not named and type(obj).__repr__ is not object.__repr__:
        try:
            text = repr(obj)
        except Exception:  # a broken repr: the class name still names the policy
            text = ""
        if text and "\n" not in text and len(text) <= 200:
            return f"{module}:{text}"
    return f"{module}:{getattr(target, '__qualname__', type(target).__name__)}"


def _required_info(source: Any) -> frozenset[str]:
    wanted = getattr(source, "required_info", ())
    if wanted is None:
        return frozenset()
    if isinstance(wanted, str) or not isinstance(wanted, (Sequence, set, frozenset)):
        raise TypeError(
            f"required_info must be a tuple of keys such as ('admissible_actions',), "
            f"got {wanted!r}."
        )
    unknown = set(wanted) - REQUIRED_INFO_KEYS
    if unknown:
        raise ValueError(
            f"required_info has unknown keys {sorted(unknown)}; "
            f"the evaluator can provide {sorted(REQUIRED_INFO_KEYS)}."
        )
    return frozenset(wanted)


def _check_batch(actions: Any, expected: int) -> list[Any]:
    if not isinstance(actions, Sequence) or isinstance(actions, str):
        raise TypeError(f"act_batch must return a list of str, got {type(actions).__name__}.")
    if len(actions) != expected:
        raise ValueError(f"act_batch returned {len(actions)} actions for {expected} observations.")
    return list(actions)


def _visible_budget(policy: Any) -> bool:
    """Return the policy's one budget flag, ``visible_budget``.

    Raises:
        InvalidValue: the policy says ``budget_aware = True`` but not
            ``visible_budget``: that older name is not read, and ignoring it
            would measure the policy in hidden mode, at max(T) only.
    """
    visible = bool(getattr(policy, "visible_budget", False))
    if not visible and getattr(policy, "budget_aware", False):
        raise InvalidValue(
            "the policy sets budget_aware, which the evaluator does not read: declare "
            "visible_budget = True instead (every T then runs on its own, and info carries "
            "budget and turns_left)."
        )
    return visible


class PolicyAdapter:
    """The evaluator's view of a policy: what it needs and how to call it.

    Attributes:
        name: ``"module:QualName"`` of the policy, for results and logs.
        fingerprint: the policy's ``fingerprint`` (a hash of the files that
            decide what it does, see :mod:`agent_envs.fingerprint`), or ``None``.
        required_info: keys the evaluator must add to ``info``.
        visible_budget: the policy's one budget flag: it sees the budget, so the
            evaluator shows the turns left (a visible ``TurnBudget``: in the
            observation and in ``info``) and runs every budget separately.
        batched: the policy has ``act_batch`` on one shared instance.
        write_reply: the policy's ``write_reply(action) -> str``
            (:class:`~agent_envs.protocol.ReplyWriter`): how it writes a move
            as a reply of its own; by default the bare action.
        calls: number of policy calls made so far (``act`` or ``act_batch``).
        turns: number of actions asked for so far (an ``act_batch`` call asks
            for one per live episode): the turns played, counted as they start.
    """

    def __init__(self, policy: Any) -> None:
        self.calls = self.turns = 0
        self._shared: Any = None
        self._factory: Callable[[], Any] | None = None
        if isinstance(policy, PerEpisode):
            self._factory = policy.factory
            probe = policy.factory()
            self.name = _qualified_name(probe)
            source = probe
        elif isinstance(policy, type):
            self._factory = policy
            self.name = _qualified_name(policy)
            source = policy
        elif (
            callable(getattr(policy, "act", None))
            or callable(getattr(policy, "act_batch", None))
            or callable(policy)
        ):
            self._shared = policy
            self.name = _qualified_name(policy)
            source = policy
        else:
            raise TypeError(
                "policy must have act(observation, info) -> str, act_batch(...), be a plain "
                f"callable f(observation) -> str, or a class/PerEpisode factory; "
                f"got {type(policy).__name__}."
            )
        #: What decides the policy's behaviour beyond its name (its files' hash), or None.
        self.fingerprint = fingerprint.of(source)
        self.required_info = _required_info(source)
        self.visible_budget = _visible_budget(source)
        # A class's method is unbound here: its instances check their own episodes.
        check = None if isinstance(source, type) else getattr(source, "check_tasks", None)
        #: The policy's ``check_tasks(env, task_ids)``, called before the run, or None.
        self.check_tasks: Callable[[Any, Sequence[int]], None] | None = (
            check if callable(check) else None
        )
        self.batched = self._shared is not None and callable(
            getattr(self._shared, "act_batch", None)
        )
        # A class is not an instance: its write_reply would be unbound.
        writer = None if isinstance(source, type) else getattr(source, "write_reply", None)
        self.write_reply: Callable[[str], str] = writer if callable(writer) else str

    def recorded_name(self, name: str | None = None) -> str:
        """Return the name a run records: ``name`` (default: :attr:`name`) and the fingerprint.

        Two models saved to one path share a name but not a fingerprint, so
        the resume check and the run's fingerprint tell them apart.
        """
        name = name or self.name
        found = self.fingerprint
        return name if found is None or found in name else f"{name} [{found}]"

    def episode_actor(self) -> Actor:
        """Return the ``(observation, info) -> action`` call for a new episode."""
        policy = self._shared if self._factory is None else self._factory()
        act = getattr(policy, "act", None)
        if callable(act):
            return self._counted(act)
        act_batch = getattr(policy, "act_batch", None)
        if callable(act_batch):
            return self._counted(lambda obs, info: _check_batch(act_batch([obs], [info]), 1)[0])
        if callable(policy) and not isinstance(policy, type):
            return self._counted(lambda obs, info: policy(obs))
        raise TypeError(f"{self.name} has neither act() nor act_batch() and is not callable.")

    def _counted(self, act: Actor) -> Actor:
        def call(observation: str, info: dict[str, Any]) -> Any:
            self.calls += 1
            self.turns += 1
            return act(observation, info)

        return call

    def act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[Any]:
        """Act for many live episodes in one call (only when :attr:`batched`)."""
        self.calls += 1
        self.turns += len(observations)
        return _check_batch(self._shared.act_batch(observations, infos), len(observations))


def adapt_policy(policy: Any) -> PolicyAdapter:
    """Return a :class:`PolicyAdapter` for ``policy``, with a clear error if it is not one.

    An :class:`~agent_envs.plugins.AgentSpec` is built into its agent first.
    """
    if isinstance(policy, PolicyAdapter):
        return policy
    if isinstance(policy, AgentSpec):
        policy = policy.build()
    return PolicyAdapter(policy)
