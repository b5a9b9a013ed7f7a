"""Agent specs: short names and ``module:Class`` strings, imported only when used.

``agent_envs`` sits below ``baselines`` in the layering, so it names agents by
string and imports them lazily, as Gymnasium's registry does with entry
points.  Importing this module imports no agent and no heavy dependency.

>>> from agent_envs.agents import AGENTS, make_agent
>>> AGENTS["random"]
'baselines.simple_agents:RandomAgent'
>>> make_agent("noisy-oracle", {"epsilon": 0.2})
NoisyOracleAgent(epsilon=0.2, choice='first', seed=0)
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from agent_envs import install_hint
from agent_envs.redaction import redact_kwargs, scrub, secret_values

__all__ = ["AGENTS", "describe_agent", "make_agent", "parse_agent_kwargs", "resolve_agent"]

#: Short name -> ``"module:Class"``.
AGENTS: dict[str, str] = {
    "random": "baselines.simple_agents:RandomAgent",
    "oracle": "baselines.simple_agents:OracleAgent",
    "noisy-oracle": "baselines.simple_agents:NoisyOracleAgent",
    "sb3": "baselines.sb3_agent:SB3Agent",
    "hf": "baselines.hf_agent:HFAgent",
    "openai": "baselines.openai_agent:OpenAIChatAgent",
}

# Which pip extra brings a short name's dependencies.
_EXTRAS = {"sb3": "sb3", "hf": "llm"}


def _target(spec: str) -> str:
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("the agent spec must be a short name or 'module:Class'.")
    spec = spec.strip()
    if spec in AGENTS:
        return AGENTS[spec]
    if ":" not in spec:
        raise ValueError(
            f"Unknown agent {spec!r}: use one of {', '.join(AGENTS)}, or 'module:Class'."
        )
    return spec


def resolve_agent(spec: str) -> Any:
    """Return the class (or factory) that ``spec`` names, importing it now.

    Raises:
        ValueError: for an unknown short name, a malformed spec, a module that
            cannot be imported or a missing attribute, with a one-line message.
    """
    target = _target(spec)
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"agent spec {spec!r} must look like 'package.module:Class'.")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            raise ValueError(f"cannot import agent module {module_name!r} ({exc}).") from None
        extra = _EXTRAS.get(spec.strip())
        hint = f": {install_hint(extra)}" if extra else ""
        raise ValueError(
            f"agent {spec!r} needs the package {missing!r}, which is not installed{hint}."
        ) from None
    except ImportError as exc:
        raise ValueError(f"cannot import agent module {module_name!r} ({exc}).") from None
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {attribute!r}.") from None
    if not callable(found):
        raise ValueError(f"{target!r} is not a class or factory.")
    return found


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
        raise ValueError(
            f"--agent-kwargs is not valid JSON ({exc.msg} at character {exc.pos + 1}); "
            """pass an object such as '{"epsilon": 0.1}'."""
        ) from None
    if not isinstance(kwargs, dict):
        raise ValueError(
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
        spec: a short name from :data:`AGENTS` or ``"module:Class"``.
        kwargs: keyword arguments for the class or factory.

    Raises:
        ValueError: for a bad spec or arguments the agent refuses.
    """
    factory = resolve_agent(spec)
    kwargs = dict(kwargs or {})
    try:
        return factory(**kwargs)
    except (TypeError, ValueError) as exc:
        # Neither the arguments nor the agent's own message may show a secret.
        shown = redact_kwargs(kwargs)
        reason = scrub(str(exc), secret_values(kwargs))
        raise ValueError(f"cannot build agent {spec!r} with {shown}: {reason}") from None
