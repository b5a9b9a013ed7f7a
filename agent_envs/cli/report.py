"""``agent-envs report``: one self-contained HTML page of results (:mod:`agent_envs.report`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent_envs.arguments import UsageError, add_log_flag, add_out_flag, add_overwrite_flag
from agent_envs.cli.outputs import REPORT, check_replaceable


def _cmd_report(args: argparse.Namespace) -> int:
    from agent_envs.files import atomic_write_text, check_output_path
    from agent_envs.report import build_report

    out = check_output_path(args.out, "--out")
    for name in [*args.results, *args.log]:
        if Path(name).resolve() == out.resolve():
            raise UsageError(f"--out {out} is the same file as an input; give each its own path.")
    check_replaceable(out, "--out", REPORT, args.overwrite)
    page = build_report(args.results, args.log)  # every input read before anything is written
    atomic_write_text(out, page)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def add_report(parser: argparse.ArgumentParser) -> None:
    """Add ``report``'s arguments: the results, the run logs and the page to write."""
    parser.add_argument(
        "results", nargs="+", help="result JSON files: eval --out, compare --out or bench.json"
    )
    add_out_flag(parser, "the HTML page to write, such as report.html", required=True)
    add_log_flag(
        parser,
        "an eval run log kept with --transcripts, for the transcript browser; repeat for "
        "more (default: the logs the results name, where they exist)",
        repeat=True,
    )
    add_overwrite_flag(parser, "--out")
    parser.set_defaults(run=_cmd_report, parser=parser)
