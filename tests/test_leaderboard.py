"""docs/bench/leaderboard.html: every committed bench result, as tools/leaderboard.py makes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from report_fixtures import Page, partial_bench

from agent_envs.cli.outputs import REPORT, output_kind
from tools.leaderboard import FOLDER, LEAD, PAGE, ROOT, build, inputs, main

SMOLLM2 = FOLDER / "smollm2" / "wordle" / "bench.json"


def test_the_committed_page_is_what_the_command_makes_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the page does not depend on where it is made from
    assert build() == (ROOT / PAGE).read_text(encoding="utf-8")
    assert output_kind(ROOT / PAGE) == REPORT  # the report command may replace it
    assert main(["--check"]) == 0


def test_its_inputs_are_every_committed_bench_result_the_reference_rows_first():
    found = inputs()
    assert found[: len(LEAD)] == list(LEAD) and SMOLLM2 in found
    assert len(found) == len(set(found))
    for path in (ROOT / FOLDER).rglob("*.json"):
        data = json.loads(path.read_text())
        is_bench = isinstance(data, dict) and data.get("format") == "agent-envs-bench/1"
        assert (path.relative_to(ROOT) in found) == is_bench, path  # tool_mode/ is no bench


def test_it_shows_the_oracles_random_and_both_smollm2_rows():
    page = Page((ROOT / PAGE).read_text(encoding="utf-8"))
    [whole] = page.find(data_kind="score")
    for label, source in (("oracle", "oracle"), ("oracle visible budget", "oracle-visible"),
                          ("random", "random")):  # fmt: skip
        score = json.loads((ROOT / FOLDER / "v1" / f"{source}.json").read_text())["score"]
        [cell] = page.find(data_agent=label, data_score="generous")
        assert float(cell["attrs"]["data-value"]) == score["generous"]["value"]
        assert label in whole["text"]
    [partial] = page.find(data_kind="partial-score")
    served = ("openai smollm2 few_shot=1 max_new_tokens=32 temperature=0.7 history=raw "
              "via llama-cpp-python server")  # fmt: skip
    assert served in partial["text"] and "partial" in partial["text"]
    assert served not in whole["text"]
    server = json.loads((ROOT / SMOLLM2).with_name("server.json").read_text())
    assert f"+ {server['server_cpu_s']:.1f} in its server" in partial["text"]
    # The in-process row ran the whole suite, so it is scored beside the reference rows.
    in_process = "hf smollm2-135m few_shot=1 temperature=0.7 bfloat16 history=raw"
    assert in_process in whole["text"] and in_process not in partial["text"]
    score = json.loads((ROOT / FOLDER / "smollm2-inprocess" / "bench.json").read_text())["score"]
    [cell] = page.find(data_agent=in_process, data_score="generous")
    assert float(cell["attrs"]["data-value"]) == score["generous"]["value"]
    # Every Wordle row is in the family table: the three reference rows and both SmolLM2 rows.
    wordle = page.find(data_family="Wordle", data_budget="tight")
    assert [cell["attrs"]["data-agent"] for cell in wordle] == [
        "oracle", "oracle visible budget", "random", served, in_process,
    ]  # fmt: skip


def test_a_result_committed_later_needs_only_a_rerun(tmp_path):
    """A new bench folder under docs/bench is found: no list to edit."""
    for path in (*LEAD, SMOLLM2):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    later = partial_bench(ROOT / LEAD[2], ["agent_envs/Wordle-v0"],
                          tmp_path / FOLDER / "smollm2-inprocess", agent="hf")  # fmt: skip
    assert inputs(tmp_path) == [*LEAD, SMOLLM2, later.relative_to(tmp_path)]
    page = Page(build(tmp_path))
    assert page.find(data_agent="hf", data_family="Wordle", data_budget="tight")
    assert Path.cwd() != tmp_path  # build went back to where it was
