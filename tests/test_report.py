"""``agent-envs report``: the page's numbers are the JSON's, agent text is inert, nothing loads.

The page is parsed with the standard library's ``html.parser``; each number is
found by its cell's ``data-`` attributes and compared with the result file.
``tests/test_report_browser.py`` opens the same pages in headless Chromium.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from report_fixtures import ACTION, AGENT, ENV, REPLY, Page, hostile_run, partial_bench

from agent_envs import cli
from agent_envs.cli.outputs import REPORT, output_kind
from agent_envs.evaluation import EvalResult, compare
from agent_envs.report import GENERATOR, build_report
from agent_envs.report.transcripts import end_reason

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "docs" / "bench" / "v1"


def _report(capsys, *args: str) -> tuple[int, str]:
    status = cli.main(["report", *args])
    return status, capsys.readouterr().err


def _cells(page: Page, table: dict, count: int) -> list[dict]:
    """The first ``count`` cells of ``table``, row by row (rows K, columns T)."""
    return [e for e in page.elements[page.elements.index(table) :] if e["tag"] == "td"][:count]


def _check_surface(page: Page, label: str, result: EvalResult) -> None:
    """Every cell of ``result``'s heatmap shows and carries the JSON's value and interval."""
    [table] = page.find(data_kind="surface", data_env=result.env_id, data_agent=label)
    cells = _cells(page, table, result.surface.size)
    for cell, value, low, high in zip(
        cells, result.surface.flat, result.ci_low.flat, result.ci_high.flat, strict=True
    ):
        attrs = cell["attrs"]
        assert float(attrs["data-value"]) == value
        assert (float(attrs["data-low"]), float(attrs["data-high"])) == (low, high)
        assert f"{value:.3f} [{low:.3f}, {high:.3f}]" in cell["text"]
    assert [int(c["attrs"]["data-k"]) for c in cells[:: len(result.budgets)]] == result.ks
    assert [int(c["attrs"]["data-t"]) for c in cells[: len(result.budgets)]] == result.budgets


def test_an_eval_page_shows_the_results_numbers_and_diagnostics(tmp_path, capsys):
    path, _ = hostile_run(tmp_path)
    out = tmp_path / "report.html"
    assert _report(capsys, str(path), "--out", str(out))[0] == 0
    page, result = Page(out.read_text()), EvalResult.load(path)
    _check_surface(page, AGENT, result)
    [invalid] = page.find(data_diag="invalid_action_rate")
    assert float(invalid["attrs"]["data-value"]) == result.diagnostics["invalid_action_rate"]
    dead = page.find(data_diag="dead_end_rate")
    assert [float(d["attrs"]["data-value"]) for d in dead] == result.diagnostics["dead_end_rate"]


@pytest.mark.parametrize(
    ("env_id", "privileged"),
    [("agent_envs/Maze-5x5-v0", True), ("agent_envs/GuessNumber-v0", False)],
)
def test_every_figure_a_privileged_oracle_judges_is_labelled_so(tmp_path, env_id, privileged):
    from agent_envs.evaluation import evaluate
    from baselines.simple_agents import OracleAgent

    path = tmp_path / "result.json"
    grid = dict(ks=[1], budgets=[10, 30], tasks=2, n_bootstrap=10, step_quality=2)
    evaluate(OracleAgent(), env_id, **grid).save(path)
    heads = [e["text"] for e in Page(build_report([path])).elements if e["tag"] == "th"]
    judged = ("decision quality", "step quality", "per-error recovery", "success after an error")
    labels = [head for head in heads if head.startswith(judged)]
    assert len(labels) == 6  # two of decision quality, two of step quality, two per T
    assert all(("(privileged oracle)" in label) is privileged for label in labels), labels


def test_the_bench_page_shows_the_score_the_suite_table_and_each_difference():
    page = Page(build_report([BENCH / "oracle.json", BENCH / "random.json"]))
    for name in ("oracle", "random"):
        bench = json.loads((BENCH / f"{name}.json").read_text())
        for key in ("tight", "generous", "budget_gap"):
            [cell] = page.find(data_agent=name, data_score=key)
            item = bench["score"][key]
            assert [float(cell["attrs"][f"data-{n}"]) for n in ("value", "low", "high")] == [
                item["value"],
                item["low"],
                item["high"],
            ]
            sign = "+" if key == "budget_gap" else ""  # a gap is a difference: signed
            shown = f"{item['value']:{sign}.3f} [{item['low']:{sign}.3f}, {item['high']:{sign}.3f}]"
            assert shown in cell["text"]
        for family, row in bench["score"]["per_family"].items():
            for budget in ("tight", "generous"):
                [cell] = page.find(data_agent=name, data_family=family, data_budget=budget)
                assert float(cell["attrs"]["data-value"]) == row[budget]
        for data in bench["results"].values():
            _check_surface(page, name, EvalResult.from_dict(data))
    oracle = json.loads((BENCH / "oracle.json").read_text())["results"]
    random = json.loads((BENCH / "random.json").read_text())["results"]
    for env_id in oracle:
        difference = compare(
            EvalResult.from_dict(oracle[env_id]), EvalResult.from_dict(random[env_id])
        )
        _check_difference(page, env_id, difference)


def test_the_score_table_says_its_cpu_is_the_bench_process_s_own():
    """A served model's CPU is not in a bench result: the page must not pass it off as one."""
    page = Page(build_report([BENCH / "random.json"]))
    [table] = page.find(data_kind="score")
    seconds = json.loads((BENCH / "random.json").read_text())["seconds"].values()
    cpu = sum(float(s["cpu"]) for s in seconds)
    assert "bench CPU seconds" in table["text"] and f"{cpu:.1f}" in table["text"]
    assert "a model served by another process" in table["text"]


def _check_difference(page: Page, env_id: str, difference) -> None:
    [table] = page.find(data_kind="difference", data_env=env_id)
    cells = _cells(page, table, difference.diff.size)
    marks = difference.wins()
    for cell, value, low, high, mark in zip(
        cells, difference.diff.flat, difference.ci_low.flat, difference.ci_high.flat, marks.flat,
        strict=True,
    ):  # fmt: skip
        attrs = cell["attrs"]
        assert (float(attrs["data-value"]), float(attrs["data-low"])) == (value, low)
        assert float(attrs["data-high"]) == high and attrs["data-mark"] == mark
        assert (f"{mark} better" in cell["text"]) == bool(mark)


def test_a_compare_result_shows_its_difference_and_its_marks(tmp_path, capsys):
    oracle = json.loads((BENCH / "oracle.json").read_text())["results"][ENV]
    random = json.loads((BENCH / "random.json").read_text())["results"][ENV]
    (tmp_path / "a.json").write_text(json.dumps(oracle))
    (tmp_path / "b.json").write_text(json.dumps(random))
    assert cli.main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                     "--out", str(tmp_path / "ab.json")]) == 0  # fmt: skip
    out = tmp_path / "report.html"
    assert _report(capsys, str(tmp_path / "ab.json"), "--out", str(out))[0] == 0
    saved = json.loads((tmp_path / "ab.json").read_text())
    page = Page(out.read_text())
    [table] = page.find(data_kind="difference", data_env=ENV)
    cells = _cells(page, table, 9)
    assert [float(c["attrs"]["data-value"]) for c in cells] == list(np.ravel(saved["diff"]))
    assert [float(c["attrs"]["data-low"]) for c in cells] == list(np.ravel(saved["ci_low"]))
    assert [c["attrs"]["data-mark"] for c in cells] == list(np.ravel(saved["wins"]))
    assert "a marked cell's interval excludes 0" in out.read_text()


def test_hostile_agent_text_shows_as_text_and_never_as_markup(tmp_path):
    path, log = hostile_run(tmp_path)
    html = build_report([path], [log])
    page = Page(html)
    # The only elements are the page's own: no img, and three scripts (guard, data, code).
    assert not [e for e in page.elements if e["tag"] in ("img", "iframe", "object", "embed")]
    assert [attrs.get("type") for attrs, _ in page.scripts] == [None, "application/json", None]
    assert "<img" not in html and "alert(2)</script>" not in html and "<script>alert" not in html
    assert any(AGENT in e["text"] for e in page.elements if e["tag"] == "caption")
    episodes = page.episodes()["episodes"]
    assert episodes and all(e["agent"] == AGENT for e in episodes)
    steps = [step for e in episodes for step in e["steps"]]
    assert steps and all(s["raw"] == REPLY and s["action"] == ACTION for s in steps)


def test_bidi_controls_in_a_name_or_reply_cannot_reorder_the_page(tmp_path):
    """An agent name holding U+202E reversed the rest of its caption in Chromium."""
    from agent_envs.evaluation import evaluate

    name = "rtl\u202eevil\u2066x"
    log = tmp_path / "bidi.jsonl"
    grid = {"ks": [1], "budgets": [2], "tasks": 2, "n_bootstrap": 10}
    result = evaluate(lambda observation: "\u202e50", ENV, **grid, log_path=str(log),
                      transcripts=True, agent_name=name)  # fmt: skip
    result.save(tmp_path / "bidi.json")
    html = build_report([tmp_path / "bidi.json"], [log])
    assert not re.search("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", html)
    shown = "rtl&lt;U+202E&gt;evil&lt;U+2066&gt;x"
    page = Page(html)
    [caption] = [e for e in page.elements if e["tag"] == "caption" and "rtl" in e["text"]]
    assert f"<caption><bdi>{shown}</bdi>: Pass@(K,T)" in html  # isolated from the sentence
    assert caption["text"].startswith("rtl<U+202E>evil<U+2066>x: ")
    episodes = page.episodes()["episodes"]
    assert episodes and all(e["agent"] == "rtl<U+202E>evil<U+2066>x" for e in episodes)
    assert all(step["action"] == "<U+202E>50" for e in episodes for step in e["steps"])


def test_the_page_loads_nothing_from_any_server_and_is_marked_as_ours(tmp_path):
    path, log = hostile_run(tmp_path)
    for html in (build_report([path], [log]), build_report([BENCH / "oracle.json"])):
        page = Page(html)
        assert not [e for e in page.elements if "src" in e["attrs"]]
        assert all(
            e["attrs"]["href"].startswith("#") for e in page.elements if "href" in e["attrs"]
        )
        assert not re.search(r"https?://|url\(|@import", html)
        [policy] = page.find(http_equiv="Content-Security-Policy")
        assert policy["attrs"]["content"].startswith("default-src 'none'")
        assert page.find(name="generator", content=GENERATOR)
        out = tmp_path / "page.html"
        out.write_text(html)
        assert output_kind(out) == REPORT


def test_transcripts_are_found_beside_a_result_and_carry_what_the_filters_use(tmp_path):
    path, _ = hostile_run(tmp_path)  # its settings name the log, which exists
    data = Page(build_report([path])).episodes()
    episodes = data["episodes"]
    assert len(episodes) == 3 * 2 and data["notes"] == ["hostile.jsonl: 6 episodes"]
    for episode in episodes:
        assert episode["env"] == ENV and episode["budget"] == "4"
        assert episode["success"] == "no" and episode["end"] == end_reason({**episode,
            "success": False, "turns": int(episode["turns"]), "budget": 4, "error": None,
            "dead_end_turn": None})  # fmt: skip
        assert len(episode["steps"]) == int(episode["turns"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        ('{"a": 1}', "has no format key"),
        ('{"format": "agent-envs-runlog/6"}', "its format is 'agent-envs-runlog/6'"),
        ('{"format": "agent-envs-bench/1", "score": {}}', "malformed bench result"),
        ('{"format": "agent-envs-compare/1", "ks": [1]}', "malformed comparison"),
        ('{"format": "agent-envs-result/2"}', "malformed result"),
    ],
)
def test_a_file_that_is_no_result_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    bad, out = tmp_path / "bad.json", tmp_path / "report.html"
    bad.write_text(content)
    status, err = _report(capsys, str(bad), "--out", str(out))
    assert status == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_a_log_that_is_no_run_log_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "notes.jsonl"
    bad.write_text("hello\n")
    status, err = _report(capsys, str(BENCH / "random.json"), "--log", str(bad), "--out",
                          str(tmp_path / "r.html"))  # fmt: skip
    assert status == 2 and len(err.strip().splitlines()) == 1 and "not an agent-envs run log" in err


def test_out_never_replaces_a_file_agent_envs_did_not_write(tmp_path, capsys):
    out, source = tmp_path / "report.html", str(tmp_path / "random.json")
    (tmp_path / "random.json").write_text((BENCH / "random.json").read_text())
    out.write_text("<html>my own notes</html>")
    status, err = _report(capsys, source, "--out", str(out))
    assert status == 2 and "--overwrite" in err and out.read_text() == "<html>my own notes</html>"
    assert _report(capsys, source, "--out", str(out), "--overwrite")[0] == 0
    assert _report(capsys, source, "--out", str(out))[0] == 0  # its own page: replaced
    status, err = _report(capsys, source, "--out", source)
    assert status == 2 and "same file as an input" in err


def test_every_option_says_its_default():
    commands = cli._parser()._subparsers._group_actions[0].choices
    for action in commands["report"]._actions:
        if action.option_strings and action.dest != "help":
            assert "default" in action.help or "required" in action.help


def test_the_committed_bench_page_holds_the_committed_scores():
    """docs/bench/v1/report.html (written by the command in docs/bench.md) is not stale."""
    page = Page((BENCH / "report.html").read_text())
    for name in ("oracle", "random"):
        score = json.loads((BENCH / f"{name}.json").read_text())["score"]
        for key in ("tight", "generous", "budget_gap"):
            [cell] = page.find(data_agent=name, data_score=key)
            assert float(cell["attrs"]["data-value"]) == score[key]["value"]
    assert page.find(name="generator", content=GENERATOR)


def test_each_result_is_labelled_by_its_agent_and_settings_never_its_file():
    """Two oracle benches were both "oracle (file name)"; the visible budget tells them apart."""
    page = Page(build_report([BENCH / "oracle.json", BENCH / "oracle-visible.json"]))
    assert page.find(data_agent="oracle visible budget", data_score="tight")
    assert page.find(data_kind="surface", data_env=ENV, data_agent="oracle")
    assert page.find(data_kind="difference", data_env=ENV, data_b="oracle visible budget")
    # Still the same label: #2, in the order given, and no file name anywhere in a label.
    page = Page(build_report([BENCH / "random.json", BENCH / "random.json"]))
    labels = [e["attrs"]["data-agent"] for e in page.elements if "data-score" in e["attrs"]]
    assert labels == ["random"] * 3 + ["random #2"] * 3
    assert page.find(data_kind="difference", data_env=ENV, data_a="random", data_b="random #2")


def test_an_llm_agents_label_holds_its_model_and_settings(tmp_path):
    agent = ('hf {"base_url": "http://x", "dtype": "bfloat16", "few_shot": 1, '
             '"model": "smollm2-135m", "temperature": 0.7, "threads": 1}')  # fmt: skip
    labels = []
    for name in ("a", "b"):
        path = partial_bench(BENCH / "random.json", [ENV], tmp_path / name, agent=agent,
                             history="raw")  # fmt: skip
        labels.append(json.loads(path.read_text())["agent"])
    page = Page(build_report([tmp_path / "a" / "bench.json", tmp_path / "b" / "bench.json"]))
    want = "hf smollm2-135m few_shot=1 temperature=0.7 bfloat16 history=raw"
    assert page.find(data_agent=want, data_score="tight")
    assert page.find(data_agent=f"{want} #2", data_score="tight")
    assert not [e for e in page.elements if "bench.json" in e["attrs"].get("data-agent", "")]


def test_the_family_table_joins_every_results_rows(tmp_path):
    """`report wordle/bench.json guess/bench.json` listed Wordle only: the first result's rows."""
    wordle = partial_bench(BENCH / "oracle.json", ["agent_envs/Wordle-v0"], tmp_path / "wordle")
    guess = partial_bench(BENCH / "oracle.json", [ENV], tmp_path / "guess")
    page = Page(build_report([wordle, guess]))
    [table] = page.find(data_kind="suite")
    heads = [e["text"] for e in page.elements[page.elements.index(table) :]
             if e["tag"] == "th" and e["attrs"].get("scope") == "rowgroup"]  # fmt: skip
    assert heads == ["GuessNumber", "Wordle"]  # both, in the suite's order
    for family in heads:  # one agent: the two files are its parts, under one label
        assert len(page.find(data_agent="oracle", data_family=family, data_budget="tight")) == 1


def test_partial_results_are_marked_and_kept_apart_from_the_suite_score(tmp_path):
    wordle = partial_bench(BENCH / "random.json", ["agent_envs/Wordle-v0"], tmp_path / "w")
    page = Page(build_report([BENCH / "oracle.json", wordle]))
    [whole] = page.find(data_kind="score")
    [partial] = page.find(data_kind="partial-score")
    assert "oracle" in whole["text"] and "random" not in whole["text"]
    assert "random partial" in partial["text"] and "comparable with neither" in partial["text"]
    [cell] = page.find(data_agent="random", data_score="tight")
    assert cell in _cells(page, partial, 3)
    assert "Wordle" in partial["text"]  # the rows it ran


def test_each_family_shows_its_intervals_and_budget_gap():
    from agent_envs.bench import family_scores

    page = Page(build_report([BENCH / "oracle.json"]))
    bench = json.loads((BENCH / "oracle.json").read_text())
    for (family, row), result in zip(
        bench["score"]["per_family"].items(), bench["results"].values(), strict=True
    ):
        budgets = result["settings"]["budgets"]
        cells = {}
        for budget in ("tight", "generous", "budget_gap"):
            [cell] = page.find(data_agent="oracle", data_family=family, data_budget=budget)
            cells[budget] = [float(cell["attrs"][f"data-{n}"]) for n in ("value", "low", "high")]
        for budget, j in (("tight", 0), ("generous", -1)):  # K=1: the surface's first row
            assert cells[budget] == [row[budget], result["ci_low"][0][j], result["ci_high"][0][j]]
        low, high = cells["budget_gap"][1:]
        assert cells["budget_gap"][0] == row["generous"] - row["tight"]
        assert low <= cells["budget_gap"][0] <= high
        assert family_scores(result, budgets[0], budgets[-1])["budget_gap"]["low"] == low
    # FrozenLake-Slippery's gap varies task to task: its interval has width.
    [gap] = page.find(data_agent="oracle", data_family="FrozenLake-Slippery",
                      data_budget="budget_gap")  # fmt: skip
    assert float(gap["attrs"]["data-low"]) < float(gap["attrs"]["data-high"])


def test_a_note_names_each_log_without_transcripts_once_and_how_to_keep_them(tmp_path):
    ids = "agent_envs/Wordle-v0,agent_envs/GuessNumber-v0"
    out = tmp_path / "b"
    assert cli.main(["bench", "v1", "--agent", "oracle", "--only", ids, "--out", str(out)]) == 0
    eval_path, _ = hostile_run(tmp_path)  # kept its transcripts
    bare = tmp_path / "bare.jsonl"
    cli.main(["eval", ENV, "--agent", "random", "--k", "1", "--t", "3", "--tasks", "2",
              "--n-bootstrap", "10", "--log", str(bare), "--out", str(tmp_path / "bare.json"),
              "--no-progress"])  # fmt: skip
    notes = Page(build_report([out / "bench.json", out / "bench.json", eval_path,
                               tmp_path / "bare.json"])).episodes()["notes"]  # fmt: skip
    command = (f"agent-envs bench v1 --agent oracle --only {ids.split(',')[1]},"
               f"{ids.split(',')[0]} --transcripts --out NEW_FOLDER")  # fmt: skip
    [bench_note] = [note for note in notes if note.startswith("oracle: ")]
    assert ("2 run logs kept no transcripts (agent_envs__GuessNumber-v0.jsonl, "
            "agent_envs__Wordle-v0.jsonl)") in bench_note  # fmt: skip
    assert command in bench_note and "a new folder" in bench_note
    [eval_note] = [note for note in notes if note.startswith("random: ")]
    assert "1 run log kept no transcripts (bare.jsonl)" in eval_note
    assert "agent-envs eval ... --log NEW.jsonl --transcripts" in eval_note
    assert "hostile.jsonl: 6 episodes" in notes


def test_the_committed_smollm2_page_is_what_report_makes_of_its_files(monkeypatch):
    """docs/bench/smollm2/report.html: the SmolLM2 row's page, with its transcripts, not stale.

    It was written from the repository's root by the command in docs/bench.md,
    so it names its files relative to the root.
    """
    monkeypatch.chdir(ROOT)
    folder = Path("docs") / "bench" / "smollm2"
    results = sorted(folder.glob("*/bench.json"))
    assert results, "the SmolLM2 row's results are committed"
    assert build_report(results) == (folder / "report.html").read_text()
    page = Page((folder / "report.html").read_text())
    for path in results:
        bench = json.loads(path.read_text())
        assert bench["partial"] and bench["agent"].startswith("openai")
        log = path.parent / "logs" / f"{bench['rows'][0].replace('/', '__')}.jsonl"
        episodes = len(log.read_text().splitlines()) - 1
        assert episodes == len(bench["episodes"][bench["rows"][0]]) == 80
        # Every episode's transcript is in the page's browser, turn by turn.
        shown = [e for e in page.episodes()["episodes"] if e["env"] == bench["rows"][0]]
        assert len(shown) == episodes
        assert all(len(e["steps"]) == int(e["turns"]) for e in shown)


def test_the_committed_in_process_smollm2_page_is_what_report_makes_of_its_files(monkeypatch):
    """docs/bench/smollm2-inprocess/: the whole suite in-process, every transcript on its page."""
    monkeypatch.chdir(ROOT)
    folder = Path("docs") / "bench" / "smollm2-inprocess"
    result = folder / "bench.json"
    assert build_report([result]) == (folder / "report.html").read_text()
    bench = json.loads(result.read_text())
    assert not bench["partial"] and bench["agent"].startswith("hf") and len(bench["rows"]) == 10
    assert "agent_envs/KnowledgeSearch-v0" in bench["rows"]
    shown = Page((folder / "report.html").read_text()).episodes()["episodes"]
    for env_id in bench["rows"]:
        log = folder / "logs" / f"{env_id.replace('/', '__')}.jsonl"
        episodes = len(log.read_text().splitlines()) - 1
        assert episodes == len(bench["episodes"][env_id]) == 80
        assert len([e for e in shown if e["env"] == env_id]) == episodes
