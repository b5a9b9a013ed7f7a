"""The real-model study v4's report: ``python -m studies.real_model_v4 --report``.

It reads the committed runs (``runs/<regime>-seed<k>/job.json``) and refuses
any run not made by the launched commit and design (``launch.json``), and a
design in the code that differs from the launched one.  Then:

* until all ``len(REGIMES) x SEEDS`` runs have landed, it prints their
  progress (which runs landed, CPU-hours spent against the forecast in
  ``cost-v4-bfloat16.json``) and writes nothing: no primary test is computed
  before the last run lands;
* with every run in, it writes ``results.json`` and ``results.md``: the five
  primary tests as :func:`studies.real_model_v4.design.primary_results` gives
  them (per-seed values, estimate, p, Holm p, the verdict word), then the
  secondary figures of ``design.SECONDARY``, each labelled secondary, the
  cost per regime and the gates' records.

Claim 1 reads the oracle's Pass@(1,T) on the held-out tasks.  It is measured
here, by the deterministic :class:`~agent_envs.evaluation.reference.OracleAgent`
on the runs' own tasks, grid and samples (a fraction of a second), and
checked against the oracle turns every run recorded
(``diagnostics.by_horizon``), so an env that changed since the launch is
refused rather than reported.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation import EvalResult
from agent_envs.statistics.families import interval
from studies import report as kit
from studies.preregistration import PreregistrationError, check_launched
from studies.real_model_v4 import design as d

#: The cost forecast the launch was decided on.
FORECAST = "cost-v4-bfloat16.json"
GATE_FILES = {"calibration": "calibration.json", "learning": "learning_gate.json"}
#: The secondary comparisons of recovery and step quality.
REFERENCES = ("base", "validity")
_FOLDER = re.compile(r"(?P<regime>[a-z-]+)-seed(?P<seed>0|[1-9][0-9]*)")
#: The settings every run must share: the same held-out tasks on the same grid.
_GRID = ("env_name", "tasks", "budgets", "ks", "samples", "mode")

#: regime -> seed -> that run's ``job.json`` (its ``result`` a dict).
Runs = dict[str, dict[int, dict[str, Any]]]


# ---------------------------------------------------------------- the runs
def _slug(regime: str, seed: int) -> str:
    return f"{regime}-seed{seed}"


def read_run(path: Path, launch: Mapping[str, Any]) -> dict[str, Any]:
    """One run's ``job.json``, its ``result`` a dict (a JSON string is parsed).

    Raises:
        PreregistrationError: a folder that is no run of the design, a record
            of another run, or one made by another design or commit than the
            launched ones.
    """
    match = _FOLDER.fullmatch(path.parent.name)
    if not match or match["regime"] not in d.REGIMES or int(match["seed"]) >= d.SEEDS:
        raise PreregistrationError(f"{path.parent}: not a run of the design (<regime>-seed<k>)")
    record = json.loads(path.read_text(encoding="utf-8"))
    if (record.get("regime"), record.get("seed")) != (match["regime"], int(match["seed"])):
        raise PreregistrationError(f"{path} records another run than its folder names")
    for key, what in (("design_sha256", "design"), ("commit", "commit")):
        if record.get(key) != launch[key]:
            raise PreregistrationError(
                f"{path}: its {what} ({str(record.get(key))[:12]}) is not the launched one "
                f"({launch[key][:12]}, launch.json): the report reads the launched study only"
            )
    if isinstance(record["result"], str):
        record["result"] = json.loads(record["result"])
    return record


def _off_design(settings: Mapping[str, Any]) -> bool:
    """Whether a run's evaluation left the design's env, T grid, tasks or samples."""
    return (
        settings["env_name"] != d.ENV_ID
        or settings["budgets"] != list(d.T_GRID)
        or len(settings["tasks"]) != d.EVAL_TASKS
        or settings["samples"] != d.EVAL_SAMPLES
    )


def _check_grid(runs: Runs) -> None:
    """Refuse runs that were not evaluated on the design's held-out tasks and grid."""
    first = None
    for regime, seeds in runs.items():
        for seed, record in seeds.items():
            settings = record["result"]["settings"]
            grid = {key: settings[key] for key in _GRID}
            first = first or grid
            wrong = [key for key in _GRID if grid[key] != first[key]]
            if _off_design(settings):
                wrong.append("the design's grid")
            if wrong:
                raise PreregistrationError(
                    f"run {_slug(regime, seed)} differs from the others in {', '.join(wrong)}"
                )


def load_runs(out: Path) -> tuple[dict[str, Any], Runs]:
    """Return the launch record and every committed run, each checked against the launch.

    Raises:
        PreregistrationError: the code's design is not the launched one, or a
            run is refused by :func:`read_run` or differs in its grid.
    """
    launch = check_launched(out, d.design())
    runs: Runs = {name: {} for name in d.REGIMES}
    for path in sorted((out / "runs").glob("*/job.json")):
        record = read_run(path, launch)
        runs[record["regime"]][record["seed"]] = record
    _check_grid(runs)
    return launch, runs


def missing(runs: Runs) -> list[str]:
    """The runs of the design not landed yet, in the design's order."""
    return [_slug(n, s) for n in d.REGIMES for s in range(d.SEEDS) if s not in runs[n]]


def in_seed_order(runs: Runs) -> dict[str, list[dict[str, Any]]]:
    """Each regime's runs as a list in seed order: what the design's statistics read."""
    return {name: [seeds[s] for s in sorted(seeds)] for name, seeds in runs.items()}


# ---------------------------------------------------------------- progress
def _cpu(record: Mapping[str, Any]) -> float:
    return float(record["seconds"]["process_cpu"])


def progress(runs: Runs, out: Path) -> tuple[list[str], dict[str, Any]]:
    """The study's progress: which runs landed, CPU-hours spent against the forecast.

    Computes no statistic of any primary test.
    """
    forecast = json.loads((out / FORECAST).read_text(encoding="utf-8"))["estimate"]
    spent = sum(_cpu(r) for seeds in runs.values() for r in seeds.values())
    expected = sum(forecast["cpu_per_run"][n] * len(seeds) for n, seeds in runs.items())
    total, landed = len(d.REGIMES) * d.SEEDS, sum(len(seeds) for seeds in runs.values())
    rows = [
        (
            name,
            ", ".join(str(s) for s in sorted(seeds)) or "none",
            ", ".join(str(s) for s in range(d.SEEDS) if s not in seeds) or "none",
        )
        for name, seeds in runs.items()
    ]
    record = {
        "landed": [_slug(n, s) for n, seeds in runs.items() for s in sorted(seeds)],
        "missing": missing(runs),
        "cpu_hours": spent / 3600,
        "forecast_cpu_hours_landed": expected / 3600,
        "forecast_cpu_hours_study": forecast["cpu_hours_whole_study"],
    }
    lines = [
        f"# The real-model study v4: {landed} of {total} runs landed",
        "",
        *kit.table(["regime", "seeds landed", "seeds to come"], rows),
        "",
        f"CPU-hours spent: {spent / 3600:.2f} (process CPU of the landed runs); the forecast "
        f"for these runs {expected / 3600:.2f}, for the whole study "
        f"{forecast['cpu_hours_whole_study']:.2f} ({FORECAST}).",
        "",
        f"No primary test is computed until all {total} runs have landed: the verdicts, and "
        "results.json and results.md, come after them.",
    ]
    return lines, record


# ------------------------------------------------------------------ oracle
def _horizon_pass1(record: Mapping[str, Any]) -> list[float]:
    """Per T: the share of held-out tasks whose oracle turns (as the run recorded) fit in T."""
    result = record["result"]
    horizons = result["diagnostics"]["by_horizon"]
    tasks = len(result["settings"]["tasks"])
    return [
        sum(h["tasks"] for key, h in horizons.items() if key.isdigit() and int(key) <= t) / tasks
        for t in result["settings"]["budgets"]
    ]


def oracle(runs: Runs) -> tuple[dict[int, float], dict[str, Any]]:
    """The oracle's Pass@(1,T) on the runs' held-out tasks, and its record.

    Raises:
        PreregistrationError: a run recorded other oracle turns than the
            oracle plays now (the env changed since the launch).
    """
    from agent_envs.evaluation import evaluate
    from agent_envs.evaluation.reference import OracleAgent

    records = [r for seeds in runs.values() for r in seeds.values()]
    s = records[0]["result"]["settings"]
    agent = OracleAgent()
    grid = {"budgets": s["budgets"], "tasks": s["tasks"], "samples": s["samples"]}
    result = evaluate(agent, s["env_name"], ks=[1], seed=0, diagnostics=False, **grid)
    pass1 = dict(zip(s["budgets"], result.surface[0].tolist(), strict=True))
    for record in records:
        if not np.allclose(_horizon_pass1(record), list(pass1.values()), atol=1e-12):
            raise PreregistrationError(
                f"run {_slug(record['regime'], record['seed'])} recorded other oracle turns "
                f"than the oracle plays now ({pass1}): the env changed since the launch"
            )
    return pass1, {
        "agent": repr(agent),
        "tasks": s["tasks"],
        "samples": s["samples"],
        "pass1": pass1,
        "success_counts": result.success_counts,
    }


# ----------------------------------------------------------------- primary
def _per_seed_text(values: Sequence) -> str:
    array = np.asarray(values, dtype=float)
    if array.ndim > 1:
        return "per (seed, T): the table below"
    return ", ".join(f"{v:+.3f}" for v in array)


def primary_section(
    ordered: Mapping[str, Sequence[Mapping]], pass1: Mapping[int, float]
) -> tuple[list[str], dict[str, Any]]:
    """The five primary tests (:func:`design.primary_results`), as a table and a record."""
    cells = d.primary_results(ordered, pass1)
    rows = [
        (
            name,
            f"{cell['estimate']:+.4f}",
            _per_seed_text(cell["per_seed"]),
            f"{cell['p']:.4f}",
            f"{cell['holm_p']:.4f}",
            f"**{cell['verdict']}**",
        )
        for name, cell in cells.items()
    ]
    claim_3 = next(c for name, c in cells.items() if d.PRIMARY[name]["statistic"] is d.claim_3)
    seed_rows = [
        (f"seed {seed}", *(f"{v:+.3f}" for v in values))
        for seed, values in enumerate(claim_3["per_seed"])
    ]
    lines = [
        "## Primary tests (pre-registered; Holm over the five)",
        "",
        f"Each an exact paired sign-flip test over the {d.SEEDS} training seeds, Holm over the "
        "five.  The verdict is `verdict` in `studies/real_model_v4/design.py`: *supported* "
        f"where the Holm p is below {d.ALPHA} in the paper's direction, *contradicted* where "
        "it is below it against that direction, else *not supported*; the process tests, "
        "where the paper states no direction, read *higher*, *lower* or *no difference "
        "shown*.  Claim 3's estimate is its smallest mean over T of mix - the better of "
        f"short and long + {d.MARGIN} (above 0: non-inferior); its p is the largest of its "
        "per-T p's.",
        "",
        *kit.table(["test", "estimate", "per-seed values", "p", "Holm p", "verdict"], rows),
        "",
        f"Claim 3 per (seed, T): mix - the better of short and long + {d.MARGIN}:",
        "",
        *kit.table(["seed", *(f"T={t}" for t in d.T_GRID)], seed_rows),
        "",
        "The oracle's Pass@(1,T) on the same held-out tasks (claim 1's room): "
        + ", ".join(f"T={t}: {v:.4f}" for t, v in pass1.items())
        + ".",
        "",
    ]
    return lines, {name: {**_declared(name), **cell} for name, cell in cells.items()}


def _declared(name: str) -> dict[str, Any]:
    """A primary test's declared regimes, alternative and direction (its function aside)."""
    test = d.PRIMARY[name]
    return {
        "regimes": list(test["regimes"]),
        "alternative": test["alternative"],
        "direction": test["direction"],
    }


# --------------------------------------------------------------- secondary
def _t_header(first: str) -> list[str]:
    return [first, *(f"T={t}" for t in d.T_GRID)]


def surface_section(
    ordered: Mapping[str, Sequence[Mapping]], pass1: Mapping[int, float]
) -> tuple[list[str], dict[str, Any]]:
    """Pass@(K,T) of every regime, mean over seeds with hierarchical-bootstrap intervals.

    The K=8 surfaces are the declared secondary figure; the K=1 rows, beside
    the oracle's, are what claims 1 and 3 and the process test read.
    """
    surfaces = {
        name: kit.seed_surface([EvalResult.from_dict(r["result"]) for r in records])
        for name, records in ordered.items()
    }
    lines = []
    for k, title in (
        (max(d.KS), f"Secondary: {d.SECONDARY[0]}"),
        (1, "Secondary: Pass@(1,T) of every regime (what claims 1 and 3 read), and the oracle's"),
    ):
        i = list(d.KS).index(k)
        rows = [
            (name, *(kit.cell(*(s[x][i, j] for x in ("mean", "low", "high"))) for j in range(6)))
            for name, s in surfaces.items()
        ]
        if k == 1:
            rows.append(("oracle", *(f"{v:.3f}" for v in pass1.values())))
        lines += [
            f"### {title}",
            "",
            "Mean over seeds [95% hierarchical bootstrap: seeds, then tasks within a seed].",
            "",
            *kit.table(_t_header("regime"), rows),
            "",
        ]
    record = {name: {key: v.tolist() for key, v in s.items()} for name, s in surfaces.items()}
    return lines, record


def move_section(runs: Runs) -> tuple[list[str], dict[str, Any]]:
    """The share of each kind of move per regime: mean over seeds [95% bootstrap over seeds]."""
    from studies.real_model.moves import MOVES

    record, rows = {}, []
    for name, seeds in runs.items():
        mixes = [seeds[s]["moves"] for s in sorted(seeds)]
        cells = {kind: interval([np.array([m[kind]]) for m in mixes]) for kind in MOVES}
        record[name] = {
            **{
                kind: dict(zip(("mean", "low", "high"), c, strict=True))
                for kind, c in cells.items()
            },
            "moves": sum(m["moves"] for m in mixes),
        }
        rows.append((name, *(kit.cell(*c) for c in cells.values()), record[name]["moves"]))
    lines = [
        f"### Secondary: {d.SECONDARY[1]}",
        "",
        "Held-out episodes, every move classified by `studies/real_model/moves.py` (bisect: a "
        "midpoint of the interval shown; step: one from the previous guess; repeat: guessed "
        "before; invalid: refused by the env).  Mean over seeds [95% bootstrap over seeds].",
        "",
        *kit.table(["regime", *MOVES, "moves"], rows),
        "",
    ]
    return lines, record


def _measure(diagnostics: Mapping[str, Any], measure: str) -> float | None:
    """One diagnostic of a run: recovery at the largest T, or a step-quality rate."""
    if measure == "recovery":
        return (diagnostics.get("error_recovery") or [{}])[-1].get("rate")
    key = {"step quality": "optimal_rate", "on path": "on_path_optimal_rate"}
    rate = (diagnostics.get("step_quality") or {}).get(key.get(measure, "recovery_optimal_rate"))
    return None if rate is None else float(rate)


MEASURES = ("recovery", "step quality", "on path", "off path")


def _values(records: Sequence[Mapping], measure: str) -> list[float | None]:
    return [_measure(r["result"]["diagnostics"] or {}, measure) for r in records]


def _difference(a: list, b: list) -> tuple[float, float, float] | None:
    """Mean over seeds of a - b, paired by seed, with its 95% bootstrap interval over seeds."""
    if None in a + b:
        return None
    return interval([np.array([x - y]) for x, y in zip(a, b, strict=True)])


def recovery_section(ordered: Mapping[str, Sequence[Mapping]]) -> tuple[list[str], dict]:
    """Recovery beside step quality (all, on the oracle's path, off it) per regime,
    and every regime's difference from base and from validity, paired by seed."""
    means, rows = {}, []
    for name, records in ordered.items():
        values = {m: _values(records, m) for m in MEASURES}
        means[name] = {m: None if None in v else float(np.mean(v)) for m, v in values.items()}
        rows.append((name, *(kit.p_text(v) for v in means[name].values())))
    differences, diff_rows = {}, []
    for reference in REFERENCES:
        for name, records in ordered.items():
            if name == reference:
                continue
            cells = {
                m: _difference(_values(records, m), _values(ordered[reference], m))
                for m in MEASURES
            }
            differences[f"{name} - {reference}"] = cells
            shown = ("n/a" if c is None else kit.cell(*c, signed=True) for c in cells.values())
            diff_rows.append((f"{name} - {reference}", *shown))
    lines = [
        f"### Secondary: {d.SECONDARY[2]}",
        "",
        "Recovery: of the recoverable errors, the share a later turn made good by "
        f"T={max(d.T_GRID)}.  Step quality: the share of oracle moves on the shared "
        "reference states: all, on the oracle's path, off it (right after a mistake).  "
        "Mean over seeds:",
        "",
        *kit.table(["regime", f"recovery (T={max(d.T_GRID)})", *MEASURES[1:]], rows),
        "",
        "Differences, paired by seed: mean [95% bootstrap over seeds]; no test (secondary):",
        "",
        *kit.table(["difference", *MEASURES], diff_rows),
        "",
    ]
    return lines, {"means": means, "differences": differences}


# ------------------------------------------------------------- cost, gates
def cost_section(runs: Runs, out: Path) -> tuple[list[str], dict[str, Any]]:
    """CPU seconds per regime (each run's ``seconds["process_cpu"]``) and the forecast."""
    forecast = json.loads((out / FORECAST).read_text(encoding="utf-8"))["estimate"]
    record, rows = {}, []
    for name, seeds in runs.items():
        cpu = [_cpu(seeds[s]) for s in sorted(seeds)]
        record[name] = {
            "runs": len(cpu),
            "cpu_seconds": sum(cpu),
            "cpu_seconds_per_run": float(np.mean(cpu)),
            "forecast_per_run": forecast["cpu_per_run"][name],
        }
        r = record[name]
        per_run = (f"{r['cpu_seconds_per_run']:.0f}", f"{r['forecast_per_run']:.0f}")
        rows.append((name, r["runs"], *per_run, f"{r['cpu_seconds'] / 3600:.2f}"))
    hours = sum(r["cpu_seconds"] for r in record.values()) / 3600
    lines = [
        "## Cost",
        "",
        *kit.table(["regime", "runs", "CPU-s per run", "forecast per run", "CPU-hours"], rows),
        "",
        f"In all {hours:.2f} CPU-hours (process CPU of every run), against the forecast's "
        f"{forecast['cpu_hours_whole_study']:.2f} ({FORECAST}).",
        "",
    ]
    return lines, {"regimes": record, "cpu_hours": hours, "forecast": forecast}


def _passed(record: Mapping[str, Any]) -> str:
    return "**passed**" if record["passed"] else "**failed**"


def gate_section(ordered: Mapping[str, Sequence[Mapping]], out: Path) -> tuple[list, dict]:
    """The gates' records as written once, the learning gate recomputed from the runs."""
    gates = {n: json.loads((out / f).read_text(encoding="utf-8")) for n, f in GATE_FILES.items()}
    calibration, learning = gates["calibration"], gates["learning"]
    same = kit.jsonable(d.learning_gate(ordered)) == learning
    pass1 = sorted(calibration["gate"]["pass1"].items(), key=lambda item: int(item[0]))
    checks = calibration["gate"]["checks"].items()
    lines = [
        "## Gates (each written once, before the runs it guards)",
        "",
        f"- Calibration (`calibration.json`): {_passed(calibration['gate'])}; the base model "
        f"on {calibration['tasks']} training tasks x {calibration['samples']} samples, "
        "Pass@(1,T) "
        + ", ".join(f"T={t}: {v:.3f}" for t, v in pass1)
        + "; "
        + ", ".join(f"{check}: {'yes' if ok else 'no'}" for check, ok in checks)
        + ".",
        f"- Learning (`learning_gate.json`): {_passed(learning)}; long's held-out gain over "
        f"base at T={d.LONG}: {learning['gain']:+.3f} (seeds "
        + ", ".join(f"{gain:+.3f}" for gain in learning["gains"])
        + "); recomputed from the committed runs: "
        + ("the same." if same else "**it differs**."),
        "",
    ]
    return lines, {**gates, "learning_recomputed_same": same}


# ------------------------------------------------------------------ report
def _digests(out: Path, runs: Runs) -> dict[str, str]:
    """Each run read: the SHA-256 of its ``job.json``."""
    return {
        _slug(n, s): hashlib.sha256(
            (out / "runs" / _slug(n, s) / "job.json").read_bytes()
        ).hexdigest()
        for n, seeds in runs.items()
        for s in sorted(seeds)
    }


def analyse(out: Path, launch: Mapping[str, Any], runs: Runs) -> tuple[list[str], dict]:
    """The markdown lines and the JSON record of every figure; every run must have landed."""
    if missing(runs):
        raise PreregistrationError(f"{len(missing(runs))} runs have not landed: no analysis")
    ordered = in_seed_order(runs)
    pass1, oracle_record = oracle(runs)
    total = len(d.REGIMES) * d.SEEDS
    lines = [
        "# The real-model study v4: results",
        "",
        f"All {total} runs ({len(d.REGIMES)} regimes x {d.SEEDS} seeds) of the design launched "
        f"at commit `{launch['commit'][:12]}` (design `{launch['design_sha256'][:12]}`), each "
        "run checked against `launch.json`.  Written by "
        "`python -m studies.real_model_v4 --report` from the committed runs "
        "(`runs/<regime>-seed<k>/job.json`); `results.json` holds every figure and the "
        "SHA-256 of each run read.  Only the primary tests give verdicts; every other figure "
        "is secondary.",
        "",
    ]
    record: dict[str, Any] = {
        "version": d.VERSION,
        "launch": {"commit": launch["commit"], "design_sha256": launch["design_sha256"]},
        "runs": _digests(out, runs),
        "oracle": oracle_record,
    }
    primary_lines, record["primary"] = primary_section(ordered, pass1)
    secondary: dict[str, Any] = {}
    lines += [
        *primary_lines,
        "## Secondary figures (declared in `design.SECONDARY`; no verdict)",
        "",
    ]
    for key, (part, figures) in {
        "surfaces": surface_section(ordered, pass1),
        "moves": move_section(runs),
        "recovery_and_step_quality": recovery_section(ordered),
    }.items():
        lines += part
        secondary[key] = figures
    record["secondary"] = secondary
    for key, (part, figures) in {
        "cost": cost_section(runs, out),
        "gates": gate_section(ordered, out),
    }.items():
        lines += part
        record[key] = figures
    return lines, record


def report(out: Path) -> int:
    """Check the runs; print the progress, or, with all of them in, write the results.

    Raises:
        PreregistrationError: refused runs or design (nothing is written).
    """
    launch, runs = load_runs(out)
    if missing(runs):
        print("\n".join(progress(runs, out)[0]))
        return 0
    lines, record = analyse(out, launch, runs)
    kit.write_report(out, lines, record)
    for name, cell in record["primary"].items():
        print(f"{cell['verdict']:>20}  (Holm p {cell['holm_p']:.4f})  {name}")
    print(f"wrote {out / 'results.md'} and {out / 'results.json'}")
    return 0
