"""The report page in a real browser: headless Chromium (Debian's ``chromium``, which CI installs).

Chromium runs the page's script and writes the DOM it ends with
(``--dump-dom``) or a picture of it (``--screenshot``).  The page's own
script records into ``#report-errors`` every error, every ``alert`` call and
every request its Content-Security-Policy refused, and marks
``#report-status`` ``data-js="ok"`` when it finished; Chromium's console
messages go to its stderr (``--enable-logging=stderr``).  Each run is bounded
by a timeout, and nothing is measured against the clock.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from report_fixtures import REPLY, Page, hostile_run, partial_bench

from agent_envs.evaluation import EvalResult
from agent_envs.report import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (apt-get install chromium; .ci/run installs it)",
)
ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "docs" / "bench" / "v1"
#: The window of a screenshot: wide enough for two heatmaps side by side.
WINDOW = (1280, 1600)


def chromium(profile: Path, page: Path, *mode: str) -> subprocess.CompletedProcess:
    """Open ``page`` in headless Chromium with ``mode`` (``--dump-dom`` or ``--screenshot=...``)."""
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
        f"--window-size={WINDOW[0]},{WINDOW[1]}", *mode, page.resolve().as_uri(),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _console(stderr: str) -> list[str]:
    """Chromium's lines about the page: its console, script errors and refused loads."""
    return [
        line
        for line in stderr.splitlines()
        if "CONSOLE" in line or "Uncaught" in line or "Refused" in line
    ]


def _dom(tmp_path: Path, html: str) -> tuple[Page, str]:
    page = tmp_path / "report.html"
    page.write_text(html)
    done = chromium(tmp_path / "profile", page, "--dump-dom")
    return Page(done.stdout), done.stderr


def _errors(dom: Page) -> str:
    """The text the page's script recorded: ``error: ...``, ``alert: ...``, ``blocked: ...``."""
    [errors] = dom.find(id="report-errors")
    return errors["text"]


def test_hostile_replies_run_nothing_and_the_numbers_are_the_jsons(tmp_path):
    result_path, log = hostile_run(tmp_path)
    dom, stderr = _dom(tmp_path, build_report([result_path], [log]))
    [status] = dom.find(id="report-status")
    assert status["attrs"]["data-js"] == "ok"  # the script ran to its end
    assert _errors(dom) == "" and _console(stderr) == []  # no error, no alert, nothing refused
    assert not [e for e in dom.elements if e["tag"] in ("img", "iframe", "object")]
    # The script built the browser: the first episode's turns show the reply as text.
    shown = [e["text"] for e in dom.elements if e["tag"] == "pre"]
    assert REPLY in shown
    result = EvalResult.load(result_path)
    cells = [e for e in dom.elements if e["tag"] == "td" and "data-k" in e["attrs"]]
    values = [float(c["attrs"]["data-value"]) for c in cells[: result.surface.size]]
    assert values == list(result.surface.flat)
    assert [c["text"].split()[0] for c in cells[: result.surface.size]] == [
        f"{value:.3f}" for value in result.surface.flat
    ]


def test_the_bench_page_shows_the_scores_in_the_browser(tmp_path):
    dom, stderr = _dom(tmp_path, build_report([BENCH / "oracle.json", BENCH / "random.json"]))
    assert dom.find(id="report-status")[0]["attrs"]["data-js"] == "ok"
    assert _errors(dom) == "" and _console(stderr) == []
    for name in ("oracle", "random"):
        score = json.loads((BENCH / f"{name}.json").read_text())["score"]
        [cell] = dom.find(data_agent=name, data_score="budget_gap")
        gap = score["budget_gap"]
        assert float(cell["attrs"]["data-value"]) == gap["value"]
        assert f"{gap['value']:+.3f} [{gap['low']:+.3f}, {gap['high']:+.3f}]" in cell["text"]


def test_the_joined_rows_and_the_partial_table_show_in_the_browser(tmp_path):
    """Two partial benches of one agent: both rows under its one label, apart from the suite's."""
    wordle = partial_bench(BENCH / "random.json", ["agent_envs/Wordle-v0"], tmp_path / "w")
    guess = partial_bench(BENCH / "random.json", ["agent_envs/GuessNumber-v0"], tmp_path / "g")
    dom, stderr = _dom(tmp_path, build_report([BENCH / "oracle.json", wordle, guess]))
    assert dom.find(id="report-status")[0]["attrs"]["data-js"] == "ok"
    assert _errors(dom) == "" and _console(stderr) == []
    for family in ("Wordle", "GuessNumber"):
        for agent in ("oracle", "random"):
            [cell] = dom.find(data_agent=agent, data_family=family, data_budget="budget_gap")
            assert cell["text"].startswith("+")
    [whole] = dom.find(data_kind="score")
    assert "random" not in whole["text"]
    [partial] = dom.find(data_kind="partial-score")
    assert partial["text"].count("random partial") == 2


def test_markup_that_escaped_the_escaping_would_be_refused_and_recorded(tmp_path):
    """The check above is not vacuous: raw ``<img onerror>`` in the page is caught."""
    html = build_report([BENCH / "random.json"])
    html = html.replace("<h1>", f"{REPLY}<h1>", 1)  # as if the page had pasted a reply
    dom, _ = _dom(tmp_path, html)
    assert "blocked: script-src-attr" in _errors(dom)  # the onerror handler was refused
    assert "alert:" not in _errors(dom)  # and so never ran


def test_a_screenshot_of_the_page_is_not_blank(tmp_path):
    from PIL import Image

    page = tmp_path / "report.html"
    page.write_text(build_report([BENCH / "oracle.json", BENCH / "random.json"]))
    shot = tmp_path / "report.png"
    chromium(tmp_path / "profile", page, f"--screenshot={shot}")
    with Image.open(shot) as image:
        assert image.size == WINDOW
        colours = image.convert("RGB").getcolors(maxcolors=WINDOW[0] * WINDOW[1])
    assert len(colours) > 50  # text, tables and the heatmaps' colours, not one flat fill
