"""What a report calls each result: its agent, model and settings, never its file's name.

A run records its agent as ``describe_agent`` writes it (``hf {"few_shot": 1,
"model": "smollm2-135m", ...}``, a fingerprint may follow).  :func:`agent_label`
turns that into ``hf smollm2-135m few_shot=1 temperature=0.7 bfloat16``: the
spec, the model, then every argument that changes what the agent does, in name
order (a dtype by its value alone, last).  The temperature keeps its name: in
this project ``T`` is the turn budget.
The arguments that say only where or how fast it runs (:data:`HOW_IT_RUNS`:
a server's address, retries, threads, a batch size) are left out.  A bench
adds its own settings (:func:`bench_label`): a visible budget, the dialogue
given as history, and the server that served the model when a
``server.json`` lies beside it.

Two results that still share a label and played a common env are told apart
by ``#2``, ``#3`` in the order they were given (:func:`unique_labels`);
results of one agent on different envs (two partial benches, an eval per env)
keep one label, since they are the same agent's parts.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

__all__ = [
    "HOW_IT_RUNS",
    "agent_label",
    "bench_command",
    "bench_label",
    "split_agent",
    "unique_labels",
]

#: Agent arguments that say where or how fast an agent runs, not what it does.
HOW_IT_RUNS = frozenset(
    {
        "api_key",
        "backoff",
        "base_url",
        "batch_size",
        "concurrency",
        "device",
        "max_backoff",
        "max_reply_bytes",
        "max_retries",
        "prefix_cache",
        "threads",
        "timeout",
    }
)
#: Arguments whose value alone says what it is (``bfloat16``, not ``dtype=bfloat16``).
_BARE = ("dtype",)
#: A longer text value (a system prompt) is cut to this many characters.
_LONGEST = 24


def split_agent(name: str) -> tuple[str, dict[str, Any] | None, str]:
    """Return an agent name's spec, its JSON arguments (``None`` if it has none) and the rest.

    >>> split_agent('hf {"model": "m"} [sha256:ab]')
    ('hf', {'model': 'm'}, ' [sha256:ab]')
    >>> split_agent("oracle")
    ('oracle', None, '')
    """
    spec, space, rest = name.partition(" ")
    if rest.startswith("{"):
        try:
            kwargs, end = json.JSONDecoder().raw_decode(rest)
        except ValueError:
            kwargs = None
        if isinstance(kwargs, dict):
            return spec, kwargs, rest[end:]
    return spec, None, space + rest


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= _LONGEST else text[: _LONGEST - 3] + "..."


def agent_label(name: str) -> str:
    """Return ``name`` as spec, model and the arguments that change what the agent does.

    >>> agent_label('hf {"dtype": "bfloat16", "few_shot": 1, "model": "smollm2-135m", '
    ...             '"temperature": 0.7, "threads": 1}')
    'hf smollm2-135m few_shot=1 temperature=0.7 bfloat16'
    >>> agent_label("random")
    'random'
    """
    spec, kwargs, rest = split_agent(name)
    if kwargs is None:
        return name
    parts = [spec]
    if "model" in kwargs:
        parts.append(_value(kwargs["model"]))
    parts += [
        f"{key}={_value(value)}"
        for key, value in sorted(kwargs.items())
        if key != "model" and key not in _BARE and key not in HOW_IT_RUNS
    ]
    parts += [_value(kwargs[key]) for key in _BARE if key in kwargs]
    return " ".join(parts) + rest


def bench_label(bench: dict[str, Any], server: dict[str, Any] | None = None) -> str:
    """Return a bench result's label: its agent's, then the bench's own settings.

    ``server`` is the ``server.json`` beside it, if any: its ``server`` text
    says what served the model (its first part, before a comma, is shown).
    """
    parts = [agent_label(str(bench.get("agent")))]
    results = bench.get("results") if isinstance(bench.get("results"), dict) else {}
    if any(_visible(result) for result in results.values()):
        parts.append("visible budget")
    if bench.get("history"):
        parts.append(f"history={_value(bench['history'])}")
    served = server.get("server") if isinstance(server, dict) else None
    if isinstance(served, str) and served.strip():
        parts.append(f"via {served.split(',')[0].strip()}")
    return " ".join(parts)


def bench_command(bench: dict[str, Any]) -> str:
    """Return the ``agent-envs bench`` command that plays ``bench`` again, keeping transcripts.

    Into a new folder (``NEW_FOLDER``): in the old one, the bench would resume
    every episode from its logs and play none again.  A masked secret stays
    masked (``***``).
    """
    spec, kwargs, _ = split_agent(str(bench.get("agent")))
    words = ["agent-envs", "bench", str(bench.get("suite")), "--agent", spec]
    if kwargs:
        words += ["--agent-kwargs", json.dumps(kwargs, sort_keys=True)]
    if bench.get("partial") and isinstance(bench.get("rows"), list):
        words += ["--only", ",".join(map(str, bench["rows"]))]
    if bench.get("history"):
        words += ["--history", str(bench["history"])]
    results = bench.get("results") if isinstance(bench.get("results"), dict) else {}
    if any(_visible(result) for result in results.values()):
        words.append("--visible-budget")
    return shlex.join([*words, "--transcripts", "--out", "NEW_FOLDER"])


def _visible(result: Any) -> bool:
    settings = result.get("settings") if isinstance(result, dict) else None
    return isinstance(settings, dict) and bool(settings.get("visible_budget"))


def unique_labels(items: Sequence[tuple[str, frozenset[str]]]) -> list[str]:
    """Return each ``(label, env ids)``'s label, ``#2``, ``#3`` added where a label is taken.

    A label is taken when an earlier item with that final label played one of
    the same env ids; items of one label on different envs share it.

    >>> unique_labels([("a", frozenset("x")), ("a", frozenset("y")), ("a", frozenset("x"))])
    ['a', 'a', 'a #2']
    """
    taken: dict[str, set[str]] = {}
    labels = []
    for label, envs in items:
        final, number = label, 1
        while taken.get(final, set()) & envs:
            number += 1
            final = f"{label} #{number}"
        taken.setdefault(final, set()).update(envs)
        labels.append(final)
    return labels
