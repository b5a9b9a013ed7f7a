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
import os
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


@pytest.mark.parametrize("out", ["", "  "])
def test_bench_refuses_an_empty_out_instead_of_writing_here(tmp_path, monkeypatch, capsys, out):
    """`bench v1 --out ''` ran the whole suite and wrote bench.json and logs/ into the
    current folder, as Path("") is "."; eval and report refuse an empty --out."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["bench", "v1", "--agent", "random", "--out", out]) == 2
    assert "--out is empty" in one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d["settings"].update(env_name=None), "env_name"),
        (lambda d: d["diagnostics"].update(dead_end_rate=0.5), "dead_end_rate"),
        (lambda d: d["diagnostics"]["error_recovery"].__setitem__(0, "x"), "error_recovery"),
    ],
)
def test_report_refuses_a_result_with_malformed_names_or_diagnostics(
    tmp_path, capsys, results, change, says
):
    """`report` on a result whose env_name was null or whose dead_end_rate was a number
    stopped with an AttributeError or TypeError traceback (exit status 1)."""
    data = json.loads(results["oracle"].read_text())
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert cli.main(["report", str(bad), "--out", str(tmp_path / "page.html")]) == 2
    line = one_error_line(capsys)
    assert str(bad) in line and says in line
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d.update(a=["x"]), "a must be a string"),
        (lambda d: d.update(env_id=None), "env_id must be a string"),
        (lambda d: d.update(confidence="95%"), "confidence must be a number"),
        (lambda d: d.update(diff=None), "diff and its interval are not"),
    ],
)
def test_report_refuses_a_malformed_comparison(tmp_path, capsys, results, change, says):
    """A comparison whose `a` was a list, `env_id` null, `confidence` a string or `diff`
    null stopped `report` with an AttributeError or TypeError traceback."""
    data = json.loads(results["compare"].read_text())
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert cli.main(["report", str(bad), "--out", str(tmp_path / "page.html")]) == 2
    line = one_error_line(capsys)
    assert f"{bad}: malformed comparison" in line and says in line


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d.update(seconds="x"), "seconds must map"),
        (lambda d: d["seconds"][GUESS].update(cpu="fast"), "could not convert"),
        (lambda d: d["results"][GUESS]["settings"].pop("samples"), None),
    ],
)
def test_report_reads_a_bench_result_whose_seconds_or_settings_were_edited(
    tmp_path, capsys, change, says
):
    """A bench.json with `seconds` not an object, or a row without settings.samples (which
    the row's result loads with its default), stopped `report` with a traceback."""
    out = tmp_path / "bench"
    assert cli.main(["bench", "v1", "--agent", "oracle", "--only", GUESS, "--out", str(out)]) == 0
    data = json.loads((out / "bench.json").read_text())
    change(data)
    (out / "bench.json").write_text(json.dumps(data))
    capsys.readouterr()
    status = cli.main(["report", str(out / "bench.json"), "--out", str(tmp_path / "page.html")])
    if says is None:
        assert status == 0
    else:
        assert status == 2 and says in one_error_line(capsys)


# ----------------------------------------------------------- compare seeds
@pytest.mark.parametrize("copy", [False, True], ids=["same-path", "same-content"])
def test_compare_refuses_one_result_given_as_several_seeds(tmp_path, capsys, results, copy):
    """`compare or.json,or.json,... ra.json,...` printed "6 vs 6 seeds" from one run a side."""
    oracle, random = str(results["oracle"]), str(results["random"])
    twin = str(tmp_path / "again.json") if copy else oracle
    if copy:
        _copy(results["oracle"], Path(twin))
    seeds_a = ",".join([oracle, twin, *[oracle] * 4] if not copy else [oracle, twin])
    assert cli.main(["compare", seeds_a, ",".join([random] * 2)]) == 2
    line = one_error_line(capsys)
    assert f"A gives {oracle} and {twin}" in line
    assert ("same file" if not copy else "same result") in line


# ------------------------------------------------------------ bounded input
def _sparse(path: Path, size: int) -> str:
    """A file of ``size`` bytes that takes no room on disk."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return str(path)


@pytest.mark.parametrize(
    "command",
    [
        lambda r, bad: ["report", bad, "--out", str(r["oracle"].parent / "x.html")],
        lambda r, bad: [
            "report",
            str(r["oracle"]),
            "--log",
            bad,
            "--out",
            str(r["oracle"].parent / "x.html"),
        ],
        lambda r, bad: ["compare", bad, str(r["oracle"])],
    ],
    ids=["report", "report-log", "compare"],
)
@pytest.mark.parametrize("kind", ["device", "fifo", "huge"])
def test_inputs_are_regular_files_of_bounded_size(tmp_path, capsys, results, command, kind):
    """`report /dev/zero` raised MemoryError; `report ... --log /dev/zero` grew to 24 GB."""
    if kind == "device":
        bad, expected = "/dev/zero", "is not a regular file"
    elif kind == "fifo":  # opened without blocking: no writer never hangs the command
        bad, expected = str(tmp_path / "pipe"), "is not a regular file"
        os.mkfifo(bad)
    else:  # larger than any result or log: refused by its size, never read
        bad, expected = _sparse(tmp_path / "big", 5 << 30), "bytes read at most"
    assert cli.main(command(results, bad)) == 2
    line = one_error_line(capsys)
    assert bad in line and expected in line
    assert not (results["oracle"].parent / "x.html").exists()


def test_eval_log_is_a_regular_file_of_bounded_size(tmp_path, capsys):
    """The run log an eval resumes from is read by the same reader."""
    log = _sparse(tmp_path / "big.jsonl", 5 << 30)
    assert eval_cli("--log", log) == 2
    line = one_error_line(capsys)
    assert log in line and "bytes read at most" in line


# ------------------------------------------------------------- bad values
@pytest.mark.parametrize("command", ["eval", "bench"])
def test_a_huge_integer_in_agent_kwargs_is_one_line(tmp_path, capsys, command):
    """A 5000-digit seed in --agent-kwargs raised ValueError with a traceback (exit 1)."""
    kwargs = '{"seed": ' + "9" * 5000 + "}"
    target = [GUESS] if command == "eval" else ["v1", "--out", str(tmp_path / "b")]
    assert cli.main([command, *target, "--agent-kwargs", kwargs]) == 2
    line = one_error_line(capsys)
    assert "--agent-kwargs holds a number too long" in line and "9999" not in line


def test_an_only_error_never_echoes_the_whole_argument(tmp_path, capsys):
    """An --only of 104 KB was echoed whole in its one error line."""
    only = ",".join(f"no/Such{index}-v0" for index in range(10_000))
    assert len(only) > 100_000
    assert cli.main(["bench", "v1", "--out", str(tmp_path / "b"), "--only", only]) == 2
    line = one_error_line(capsys)
    assert len(line) < 1_000 and "and 9997 more" in line and "its rows:" in line


def test_a_module_agent_that_is_not_found_says_how_to_make_it_found(tmp_path, capsys):
    """`--agent mymod:Class` failed with "No module named" and no hint about PYTHONPATH."""
    assert eval_cli("--agent", "mymod_not_on_path:Agent") == 2
    line = one_error_line(capsys)
    assert "No module named 'mymod_not_on_path'" in line
    assert "PYTHONPATH=." in line and "mymod_not_on_path.py" in line


@pytest.mark.parametrize("content", ["my own notes\n", '{"format": "agent-envs-runlog/1"}\n'])
def test_bench_log_errors_name_bench_s_own_remedy(tmp_path, capsys, content):
    """bench's run-log errors said "pass another --log path", a flag bench does not have."""
    out = tmp_path / "b"
    log = out / "logs" / "agent_envs__GuessNumber-v0.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(content)
    assert cli.main(["bench", "v1", "--out", str(out), "--only", GUESS]) == 2
    line = one_error_line(capsys)
    assert str(log) in line and "another --out" in line and "--log" not in line
    assert log.read_text() == content
