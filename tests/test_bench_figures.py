"""The measured figures the docs quote are the committed files under docs/bench/.

Each figure below was once typed into a page from a terminal, with no file
behind it.  The benchmark scripts now write their figures with ``--json``;
these tests read those committed files and check that the page says what the
file says (formatted as the page formats it).  Nothing is run or timed here.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "docs" / "bench"


def page(name: str) -> str:
    """Return a docs page with its whitespace collapsed, so line breaks do not matter."""
    return " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())


def load(name: str) -> dict:
    return json.loads((BENCH / name).read_text(encoding="utf-8"))


def cell(value: dict) -> str:
    """``Pass [low, high]`` as the pages and benchmarks/sb3_defaults.py print it."""
    return f"{value['pass']:.2f} [{value['low']:.2f}, {value['high']:.2f}]"


def test_rendering_cost_is_docs_bench_render_speed_json():
    run = load("render_speed.json")
    rows = {row["env"].split("/")[-1]: row for row in run["rows"]}
    text = [row["ansi_us"] for row in rows.values()]
    grids = [rows[name]["rgb_array_us"] for name in rows if not name.startswith("Hanoi")]
    ratios = [row["ratio"] for row in rows.values()]
    assert min(grids) == rows["Maze-7x7-v0"]["rgb_array_us"]
    assert max(grids) == rows["Sokoban-8x8-v0"]["rgb_array_us"]
    assert min(ratios) == rows["FrozenLake-v0"]["ratio"]
    assert max(ratios) == rows["Hanoi-5-v0"]["ratio"]
    said = (
        f"text {min(text):.1f} to {max(text):.1f} microseconds, images {min(grids):.0f} (Maze) "
        f"to {max(grids):.0f} (Sokoban 8x8) microseconds for the grids and "
        f"{rows['Hanoi-3-v0']['rgb_array_us']:.0f} / {rows['Hanoi-5-v0']['rgb_array_us']:.0f} "
        f"for Hanoi-3 / Hanoi-5; about {round(min(ratios), -1):.0f}x (FrozenLake 4x4) to "
        f"{round(max(ratios), -1):.0f}x (Hanoi-5) the text"
    )
    text_of_page = page("rendering.md")
    assert said in text_of_page
    assert f"{run['cpu_s']:.1f} CPU seconds for the whole run" in text_of_page
    assert "docs/bench/render_speed.json" in text_of_page


def test_compact_encoding_timings_are_docs_bench_compact_encoding_json():
    run = load("compact_encoding.json")
    cpu = {row["encoding"]: row["cpu_s"] for row in run["rows"]}
    said = (
        f"4,096 MaskablePPO steps cost {cpu['compact']:.2f} s of CPU with the compact view "
        f"against {cpu['whole_text']:.2f} s with the whole text"
    )
    assert run["steps"] == 4096 and run["torch_threads"] == 1
    assert said in page("integrations.md")
    assert "docs/bench/compact_encoding.json" in page("integrations.md")


def test_seed0_table_of_the_tuned_defaults_is_docs_bench_sb3_defaults_seed0_json():
    run = load("sb3_defaults/seed0.json")
    assert run["seed"] == 0
    text = page("classic_rl.md")
    for row in run["rows"]:
        share = row["trained"]["pass"] / max(row["oracle"]["pass"], 1e-9)
        line = (
            f"| {row['env'].split('/')[-1]} | {row['timesteps']} (+{row['bc_episodes']}) | "
            f"{row['wall_s']:.0f} s / {row['cpu_s']:.0f} s | {row['T']} | {cell(row['trained'])} "
            f"| {cell(row['oracle'])} | {cell(row['random'])} | "
            f"{share:.2f} {'met' if row['met'] else 'MISSED'} |"
        )
        assert line in text, line
    lake = run["rows"][0]
    assert lake["env"] == "agent_envs/FrozenLake-v0"
    assert f"`accuracy`, {lake['behaviour_cloning']['accuracy']}, in" in text
    cpu = [row["cpu_s"] for row in run["rows"]]
    assert f"{min(cpu):.0f}-{max(cpu):.0f} s of CPU per env" in text


def test_seed1_results_of_the_tuned_defaults_are_docs_bench_sb3_defaults_seed1_json():
    run = load("sb3_defaults/seed1.json")
    assert run["seed"] == 1
    rows = {row["env"].split("/")[-1]: row for row in run["rows"]}
    text = page("classic_rl.md")
    for name in ("FrozenLake-v0", "FrozenLake-Slippery-v0", "Sokoban-v0"):
        assert cell(rows[name]["trained"]) in text, name
    assert f"(oracle {rows['FrozenLake-Slippery-v0']['oracle']['pass']:.2f})" in text
    cpu = [row["cpu_s"] for row in run["rows"]]
    wall = [row["wall_s"] for row in run["rows"]]
    assert f"{min(cpu):.0f}-{max(cpu):.0f} s of CPU time ({min(wall):.0f}-{max(wall):.0f} s" in text
    assert "docs/bench/sb3_defaults/seed1.json" in text


def test_expert_run_is_docs_bench_sb3_expert_flags_json():
    run = load("sb3_expert_flags.json")
    trained, oracle = run["trained"], run["oracle (visible budget)"]
    text = page("classic_rl.md")
    said = f"It took {run['cpu_s']:.0f} s of CPU time ({run['wall_s']:.0f} s of wall clock"
    assert said in text
    assert f"Pass@(1,16) = {cell(trained['16'])} and Pass@(1,32) = {cell(trained['32'])}" in text
    assert f"{oracle['16']['pass']:.2f} and {oracle['32']['pass']:.2f} for the budget-aware" in text
    assert f"{run['model_zip_bytes']:,} bytes in `docs/bench/sb3_expert_flags.json`" in text


def test_the_expert_benchmark_runs_the_command_classic_rl_prints():
    spec = importlib.util.spec_from_file_location(
        "sb3_expert_flags", ROOT / "benchmarks" / "sb3_expert_flags.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = (ROOT / "docs" / "classic_rl.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```bash\n(.*?)```", source, re.S) if "--bc-episodes" in b]
    assert len(blocks) == 1
    words = shlex.split(blocks[0].replace("\\\n", " "))
    assert words[:2] == ["agent-envs", "train-sb3"]
    assert words[-2:] == ["--out", "runs/lake"]
    assert words[2:-2] == module.COMMAND
    assert load("sb3_expert_flags.json")["command"] == ["agent-envs", "train-sb3", *module.COMMAND]


def test_budgetmix_quick_time_is_docs_bench_budgetmix_quick_txt():
    record = (BENCH / "budgetmix_quick.txt").read_text(encoding="utf-8")
    real = re.search(r"^real\t(\d+)m([\d.]+)s$", record, re.M)
    user, system = (
        re.search(rf"^{name}\t(\d+)m([\d.]+)s$", record, re.M) for name in ("user", "sys")
    )
    seconds = [60 * int(m.group(1)) + float(m.group(2)) for m in (real, user, system)]
    said = f"{seconds[0]:.1f} s of wall clock and {seconds[1] + seconds[2]:.1f} s of CPU"
    assert said in page("classic_rl.md")
    assert f"cpu_s (user + sys): {seconds[1] + seconds[2]:.2f}" in record
