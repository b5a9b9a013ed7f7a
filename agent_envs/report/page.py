"""The whole page: one self-contained HTML file that makes no request to any server.

Its style and script are inline and nothing else is loaded.  Its
Content-Security-Policy says so to the browser too: ``default-src 'none'``,
and the only scripts allowed are the page's own two, by their SHA-256 hashes (so no
injected ``<script>`` and no ``onerror=`` attribute could run even if some
text escaped :func:`html.escape`, which it must not).  The ``generator``
meta tag, in the first bytes of the file, tells ``--out`` checks that
agent-envs wrote it (:func:`agent_envs.cli.outputs.output_kind`).
"""

from __future__ import annotations

import base64
import hashlib

from agent_envs.report.browser import GUARD, SCRIPT, STYLE, data_block
from agent_envs.report.cells import name
from agent_envs.report.inputs import Inputs, LogRef, Run
from agent_envs.report.suite_table import bench_section
from agent_envs.report.surfaces import anchor, env_section
from agent_envs.report.transcripts import read_episodes
from wrappers.errors import UserInputError

__all__ = ["GENERATOR", "build_page"]

#: The ``<meta name="generator">`` of every page written here.
GENERATOR = "agent-envs report"


def _policy() -> str:
    """The page's Content-Security-Policy: nothing from anywhere, but its own two scripts."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()}'"
        for code in (GUARD, SCRIPT)
    )
    return (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _episodes(logs: list[LogRef]) -> tuple[list[dict], list[str]]:
    """Read every log's episodes with transcripts; a note on what each log gave."""
    episodes, notes = [], []
    bare: dict[tuple[str, str], list[str]] = {}  # (agent, command) -> its logs without any
    for ref in logs:
        try:
            kept, found = read_episodes(ref.path, agent=ref.agent)
        except UserInputError as exc:
            if ref.given:
                raise
            notes.append(f"{ref.path.name}: skipped ({exc})")
            continue
        if not found:
            names = bare.setdefault((ref.agent, ref.rerun), [])
            if ref.path.name not in names:
                names.append(ref.path.name)
        elif len(kept) < found:
            notes.append(f"{ref.path.name}: the first {len(kept)} of {found} episodes")
        else:
            notes.append(f"{ref.path.name}: {found} episodes")
        episodes += kept
    notes += [_bare_note(agent, rerun, names) for (agent, rerun), names in bare.items()]
    if not logs:
        notes.append("No run log was given or found beside the results (--log FILE).")
    return episodes, notes


def _bare_note(agent: str, rerun: str, names: list[str]) -> str:
    """One note per agent for its logs without transcripts, and the command that keeps them."""
    whose = f"{agent}: " if agent else ""
    logs = f"{len(names)} run log{'s' if len(names) > 1 else ''}"
    where = (
        "a new folder: in the old one the bench would resume every episode and play none again"
        if rerun.startswith("agent-envs bench")
        else "a new log: the old one would resume every episode and play none again"
    )
    return (
        f"{whose}{logs} kept no transcripts ({', '.join(names)}); to keep them, run {rerun} "
        f"(into {where})."
    )


def _by_env(inputs: Inputs) -> dict[str, tuple[list[Run], list]]:
    envs: dict[str, tuple[list[Run], list]] = {}
    for run in inputs.runs:
        envs.setdefault(run.result.env_id, ([], []))[0].append(run)
    for source, difference in inputs.compares:
        envs.setdefault(difference.env_id, ([], []))[1].append((source, difference))
    return envs


def _transcripts(inputs: Inputs) -> str:
    episodes, notes = _episodes(inputs.logs)
    return (
        '<section id="transcripts"><h2>Transcripts</h2><ul id="transcript-notes"></ul>'
        '<div id="filters"></div><p id="episode-count"></p>'
        '<div class="episodes"><table id="episodes-table"></table></div><div id="episode"></div>'
        f"{data_block(episodes, notes)}</section>"
    )


def build_page(inputs: Inputs) -> str:
    """Return the report page of ``inputs`` as one HTML document."""
    envs = _by_env(inputs)
    links = (['<a href="#bench">Benchmark suite</a>'] if inputs.benches else []) + [
        f'<a href="#{anchor(env_id)}">{name(env_id)}</a>' for env_id in envs
    ]
    links.append('<a href="#transcripts">Transcripts</a>')
    sources = ", ".join(f"<code>{name(source)}</code>" for source in inputs.sources)
    body = [
        "<h1>agent-envs report</h1>",
        f"<p>From {sources}. This page is one file and loads nothing from any server.</p>",
        '<p id="report-status" data-js="off">Filters need JavaScript; every table is plain '
        'HTML.</p><ul id="report-errors"></ul>',
        f"<nav><p>{' | '.join(links)}</p></nav>",
        bench_section(inputs.benches) if inputs.benches else "",
        *(env_section(env_id, runs, compares) for env_id, (runs, compares) in envs.items()),
        _transcripts(inputs),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="{GENERATOR}">'
        f'<meta http-equiv="Content-Security-Policy" content="{_policy()}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>agent-envs report</title><style>{STYLE}</style><script>{GUARD}</script>"
        "</head><body>" + "\n".join(body) + f"<script>{SCRIPT}</script></body></html>\n"
    )
