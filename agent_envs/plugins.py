"""Installed agents and commands, found through ``importlib.metadata`` entry points.

``agent_envs`` sits below ``baselines`` in the layering and never names it,
not even in a string: the baselines declare themselves in ``pyproject.toml``,
exactly as a third-party package registers its own agents, and this module
finds them by group, as pytest finds plugins:

* ``agent_envs.agents``: short name -> a policy class or factory
  (``agent-envs eval --agent NAME``);
* ``agent_envs.commands``: command name -> ``main(argv)`` returning the exit
  status (``agent-envs NAME ...``, e.g. ``train-sb3``).

Nothing is imported until it is used, so importing this module imports no
agent and no heavy dependency.  The one thing it knows about the agents and
commands this repository installs is which of its extras brings their
dependencies, for the install hint when one is missing (a third-party plugin
gets the plain message); that table names entry points, never a package above.
A *policy* is the concept (see :mod:`agent_envs.protocol`); an *agent* is a
policy installed under a name.

>>> from agent_envs.plugins import agent_names, make_agent
>>> "random" in agent_names()
True
>>> make_agent("noisy-oracle", {"epsilon": 0.2})
NoisyOracleAgent(epsilon=0.2, choice='first', seed=0)
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_envs import install_hint
from agent_envs.redaction import redact_kwargs, remember, scrub, secret_values
from wrappers.errors import InvalidValue

__all__ = [
    "AGENT_GROUP",
    "COMMAND_GROUP",
    "AgentSpec",
    "agent_names",
    "command_names",
    "describe_agent",
    "load_command",
    "make_agent",
    "parse_agent_kwargs",
    "resolve_agent",
]

#: The entry-point group of agents: ``name = "package.module:Class"``.
AGENT_GROUP = "agent_envs.agents"
#: The entry-point group of commands: ``name = "package.module:main"``.
COMMAND_GROUP = "agent_envs.commands"

# Which extra of this project brings an agent's or command's dependencies (install hints).
_EXTRAS = {"sb3": "sb3", "hf": "llm", "train-sb3": "sb3", "train-llm": "rl"}


def _entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """Return the installed entry points of ``group`` by name (the first one wins)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry in importlib.metadata.entry_points(group=group):
        found.setdefault(entry.name, entry)
    return found


def agent_names() -> list[str]:
    """Return the short names of the installed agents, sorted."""
    return sorted(_entry_points(AGENT_GROUP))


def command_names() -> list[str]:
    """Return the names of the installed commands, sorted."""
    return sorted(_entry_points(COMMAND_GROUP))


def _target(spec: str) -> str:
    """Return ``"module:attribute"`` for a short name or a ``module:Class`` spec."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidValue("the agent spec must be a short name or 'module:Class'.")
    spec = spec.strip()
    installed = _entry_points(AGENT_GROUP)
    if spec in installed:
        return installed[spec].value
    if ":" not in spec:
        names = ", ".join(sorted(installed)) or "none installed"
        raise InvalidValue(f"Unknown agent {spec!r}: use one of {names}, or 'module:Class'.")
    return spec


def _load(target: str, kind: str, name: str) -> Any:
    """Import ``module:attribute`` for the ``kind`` ("agent", "command") ``name``."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise InvalidValue(f"{kind} spec {name!r} must look like 'package.module:Class'.")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            top = module_name.partition(".")[0]
            raise InvalidValue(
                f"cannot import {kind} module {module_name!r} ({exc}); the agent-envs command "
                f"does not look in the current folder: run it with PYTHONPATH=. from the "
                f"folder that holds {top}.py (or the {top}/ package), or install that package."
            ) from None
        extra = _EXTRAS.get(name)
        hint = f": {install_hint(extra)}" if extra else ""
        raise InvalidValue(
            f"{kind} {name!r} needs the package {missing!r}, which is not installed{hint}."
        ) from None
    except ImportError as exc:
        raise InvalidValue(f"cannot import {kind} module {module_name!r} ({exc}).") from None
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise InvalidValue(f"module {module_name!r} has no attribute {attribute!r}.") from None
    if not callable(found):
        raise InvalidValue(f"{target!r} is not callable.")
    return found


def resolve_agent(spec: str) -> Any:
    """Return the class (or factory) that ``spec`` names, importing it now.

    Args:
        spec: an installed short name (see :func:`agent_names`) or
            ``"package.module:Class"``.

    Raises:
        ValueError: for an unknown short name, a malformed spec, a module that
            cannot be imported or a missing attribute, with a one-line message.
    """
    target = _target(spec)
    return _load(target, "agent", spec.strip())


def load_command(name: str) -> Callable[[list[str]], int | None]:
    """Return the ``main(argv)`` of the installed command ``name``, importing it now.

    Raises:
        ValueError: no such command is installed, or it cannot be imported.
    """
    installed = _entry_points(COMMAND_GROUP)
    if name not in installed:
        raise InvalidValue(f"no command {name!r} is installed (installed: {command_names()}).")
    return _load(installed[name].value, "command", name)


def parse_agent_kwargs(text: str | None) -> dict[str, Any]:
    """Parse ``--agent-kwargs`` JSON into a dict, with a one-line error.

    The error never quotes the text: it may hold an API key.  It says where
    the JSON breaks instead.
    """
    if text is None or not text.strip():
        return {}
    try:
        kwargs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidValue(
            f"--agent-kwargs is not valid JSON ({exc.msg} at character {exc.pos + 1}); "
            """pass an object such as '{"epsilon": 0.1}'."""
        ) from None
    except RecursionError:
        raise InvalidValue("--agent-kwargs is nested too deeply to be agent arguments.") from None
    except ValueError:  # an integer longer than Python converts (4,300 digits)
        raise InvalidValue(
            "--agent-kwargs holds a number too long to read (more than "
            f"{sys.get_int_max_str_digits():,} digits); pass numbers an agent can use."
        ) from None
    if not isinstance(kwargs, dict):
        raise InvalidValue(
            '--agent-kwargs must be a JSON object such as {"epsilon": 0.1}, '
            f"got a JSON {type(kwargs).__name__}."
        )
    return kwargs


def describe_agent(spec: str, kwargs: Mapping[str, Any] | None = None) -> str:
    """Return the name a run records for ``spec`` built with ``kwargs``, secrets masked.

    This name is the table title, the result's ``agent`` and the run log's
    resume key, so it holds every argument (they change what the agent does)
    except secrets (see :mod:`agent_envs.redaction`).

    >>> describe_agent("openai", {"model": "m", "api_key": "sk-1"})
    'openai {"api_key": "***", "model": "m"}'
    """
    if not kwargs:
        return spec
    return f"{spec} {json.dumps(redact_kwargs(dict(kwargs)), sort_keys=True, default=repr)}"


def make_agent(spec: str, kwargs: Mapping[str, Any] | None = None) -> Any:
    """Build the agent ``spec`` names, calling it with ``kwargs``.

    Args:
        spec: an installed short name or ``"module:Class"``.
        kwargs: keyword arguments for the class or factory.

    Raises:
        ValueError: for a bad spec or arguments the agent refuses.
    """
    kwargs = dict(kwargs or {})
    remember(secret_values(kwargs))  # whatever the agent prints or raises is masked from now on
    factory = resolve_agent(spec)
    try:
        return factory(**kwargs)
    except (TypeError, ValueError) as exc:
        # Neither the arguments nor the agent's own message may show a secret.
        shown = redact_kwargs(kwargs)
        reason = scrub(str(exc))
        raise InvalidValue(f"cannot build agent {spec!r} with {shown}: {reason}") from None


@dataclass(frozen=True)
class AgentSpec:
    """An agent named by its spec and kwargs, built where it is used.

    ``evaluate`` accepts one wherever it accepts a policy and builds it with
    :func:`make_agent`.  On the Ray backend each worker builds its own agent
    from the spec, so an agent that cannot be pickled (an open HTTP client, a
    model on a GPU) never has to travel.  Its ``repr`` masks secret kwargs;
    the worker still gets the real value.

    >>> spec = AgentSpec("module.path:MyAgent", {"temperature": 0.7})
    >>> spec.name, dict(spec.kwargs)
    ('module.path:MyAgent', {'temperature': 0.7})
    >>> AgentSpec("openai", {"model": "m", "api_key": "sk-123"})
    AgentSpec('openai', {'model': 'm', 'api_key': '***'})
    """

    name: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:  # secrets in kwargs travel to workers, never to the screen
        return f"AgentSpec({self.name!r}, {redact_kwargs(dict(self.kwargs))!r})"

    def build(self) -> Any:
        """Return a new agent: ``make_agent(name, kwargs)``."""
        return make_agent(self.name, self.kwargs)
