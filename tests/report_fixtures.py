"""Shared by the report tests: a run whose agent writes hostile HTML, and a page parser.

The hostile agent's name, replies and parsed actions are HTML that would run
script if a page inserted them as markup; the tests check that they show as
text, in the page as written (``tests/test_report.py``) and in a real
browser (``tests/test_report_browser.py``).
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from agent_envs.evaluation import evaluate
from agent_envs.protocol import AgentAction

ENV = "agent_envs/GuessNumber-v0"
#: What the hostile agent sends as its reply, and what it claims to have parsed.
REPLY = "<img src=x onerror=alert(1)>"
ACTION = "</script><script>alert(2)</script>"
AGENT = "<script>alert(3)</script>"


class Hostile:
    """Replies with HTML whose every piece would run script if inserted as markup."""

    def act(self, observation, info):
        return AgentAction(ACTION, raw=REPLY)


def hostile_run(folder: Path) -> tuple[Path, Path]:
    """Evaluate :class:`Hostile` with transcripts; return its result file and run log."""
    log = folder / "hostile.jsonl"
    result = evaluate(
        Hostile(), ENV, ks=[1, 2], budgets=[2, 4], tasks=3, samples=2, n_bootstrap=200,
        log_path=str(log), transcripts=True, agent_name=AGENT,
    )  # fmt: skip
    path = folder / "hostile.json"
    result.save(path)
    return path, log


class Page(HTMLParser):
    """Every element of a page: its tag, attributes and text; ``<script>`` bodies kept apart."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[dict] = []
        self.scripts: list[tuple[dict, str]] = []
        self._open: list[dict] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(element)
        if tag not in ("meta", "br", "input", "img", "link"):
            self._open.append(element)

    def handle_endtag(self, tag):
        while self._open:
            element = self._open.pop()
            if element["tag"] == tag:
                if tag == "script":
                    self.scripts.append((element["attrs"], element["text"]))
                break

    def handle_data(self, data):
        for element in self._open:
            element["text"] += data

    def find(self, **wanted: str) -> list[dict]:
        """Return the elements whose attributes include ``wanted`` (``data_k`` is ``data-k``)."""
        pairs = {name.replace("_", "-"): str(value) for name, value in wanted.items()}
        return [e for e in self.elements if all(e["attrs"].get(k) == v for k, v in pairs.items())]

    def episodes(self) -> dict:
        """Return the transcript browser's data block, decoded."""
        [text] = [body for attrs, body in self.scripts if attrs.get("id") == "episodes"]
        return json.loads(text)


def partial_bench(source: Path, env_ids: list[str], folder: Path, **changes) -> Path:
    """Write the rows ``env_ids`` of the bench result ``source`` as a partial bench result.

    Its score is recomputed over those rows, as ``bench --only`` computes it;
    ``changes`` replace top-level keys (``agent``, ``history``).
    """
    from agent_envs.bench import bench_score
    from agent_envs.suites import load_suite, select

    bench = json.loads(source.read_text())
    suite = select(load_suite(bench["suite"]), env_ids)
    rows = [entry.env_id for entry in suite.entries]
    bench.update(partial=True, rows=rows, **changes)
    for key in ("results", "seconds", "episodes"):
        bench[key] = {env_id: bench[key][env_id] for env_id in rows}
    bench["score"] = bench_score(suite, bench["results"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.json"
    path.write_text(json.dumps(bench))
    return path
