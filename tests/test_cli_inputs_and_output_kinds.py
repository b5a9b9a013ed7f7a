"""What a command reads and what it may replace.

* One output kind never replaces another's file: a result is not turned into
  a report page or a comparison, nor a report page into a result, and a file
  agent-envs did not write is never replaced without ``--overwrite`` (bench,
  which has none, never replaces it).
* Every result and run log a user gives is read as a regular file of bounded
  size, so ``/dev/zero`` is one line and exit status 2.
* ``compare`` refuses one file given as several seeds.
* Bad values in ``--agent-kwargs``, ``--only`` and ``--agent`` are one line.

The CLI runs in process (``cli.main``), on the cheapest evals.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_fixtures import GUESS, QUICK, eval_cli, one_error_line

from agent_envs import cli


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    """Two eval results (the oracle's and the random agent's), a comparison and a page."""
    folder = tmp_path_factory.mktemp("results")
    paths = {name: folder / f"{name}.json" for name in ("oracle", "random", "compare")}
    assert eval_cli("--out", str(paths["oracle"])) == 0
    random = ["--agent", "random", "--seed", "1", "--out", str(paths["random"])]
    assert eval_cli(*random) == 0
    assert cli.main(["compare", str(paths["oracle"]), str(paths["random"]),
                     "--out", str(paths["compare"])]) == 0  # fmt: skip
    paths["page"] = folder / "page.html"
    assert cli.main(["report", str(paths["oracle"]), "--out", str(paths["page"])]) == 0
    return paths


def _copy(source: Path, target: Path) -> bytes:
    shutil.copyfile(source, target)
    return target.read_bytes()


# ------------------------------------------------------------ output kinds
#: Each command that writes --out, as the arguments before --out.
WRITERS = {
    "report": lambda r: ["report", str(r["random"])],
    "compare": lambda r: ["compare", str(r["oracle"]), str(r["random"])],
    "eval": lambda r: ["eval", GUESS, *QUICK, "--no-progress"],
}


@pytest.mark.parametrize(
    ("held", "writer"),
    [("oracle", "report"), ("oracle", "compare"), ("page", "eval"), ("compare", "eval")],
    ids=["result-to-page", "result-to-comparison", "page-to-result", "comparison-to-result"],
)
def test_one_output_kind_never_replaces_another(tmp_path, capsys, results, held, writer):
    """`report evcopy.json --out other.json` turned an eval result into a page, and so on."""
    target = tmp_path / f"held{results[held].suffix}"
    before = _copy(results[held], target)
    capsys.readouterr()
    command = [*WRITERS[writer](results), "--out", str(target)]
    assert cli.main(command) == 2
    line = one_error_line(capsys)
    assert str(target) in line and "--overwrite" in line and "agent-envs " in line
    assert target.read_bytes() == before
    assert cli.main([*command, "--overwrite"]) == 0  # told to: replaced
    assert target.read_bytes() != before


def test_report_never_replaces_a_bench_result(tmp_path, capsys, results):
    """`report x.json --out ref/bench.json` turned a bench result into a page."""
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"format": "agent-envs-bench/1", "agent": "a"}))
    assert cli.main(["report", str(results["oracle"]), "--out", str(bench)]) == 2
    assert "holds an agent-envs bench result, not a report page" in one_error_line(capsys)
    assert json.loads(bench.read_text())["agent"] == "a"


def test_a_file_of_the_same_kind_is_still_replaced(tmp_path, results):
    """The rule keeps a rerun updating its own output: a result replaces a result."""
    out = tmp_path / "r.json"
    _copy(results["random"], out)
    assert eval_cli("--out", str(out)) == 0
    assert json.loads(out.read_text())["settings"]["agent_name"] == "oracle"


def test_bench_never_replaces_a_bench_json_it_did_not_write(tmp_path, capsys):
    """`bench v1 --out userdir` replaced userdir/bench.json holding {"mine":1}; it has no
    --overwrite, so the message says to give another --out."""
    mine = tmp_path / "userdir" / "bench.json"
    mine.parent.mkdir()
    mine.write_text('{"mine":1}')
    assert cli.main(["bench", "v1", "--agent", "random", "--out", str(mine.parent)]) == 2
    line = one_error_line(capsys)
    assert "did not write" in line and "another --out" in line and "--overwrite" not in line
    assert mine.read_text() == '{"mine":1}' and not (mine.parent / "logs").exists()
