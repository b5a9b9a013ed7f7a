"""Write ``docs/bench/leaderboard.html``: ``agent-envs report`` of every committed bench result.

Run from the repository (any folder of it): ``python tools/leaderboard.py``;
``--check`` writes nothing and exits 1 if the committed page is not what it
would write.

The inputs are found, not listed by hand (:func:`inputs`): every bench
result (a JSON of format ``agent-envs-bench/1``) under ``docs/bench``, the
reference rows of :data:`LEAD` first (the oracle first: each env's
differences are taken against the first agent), then every other in path
order.  So a bench result committed later, such as
``docs/bench/smollm2-inprocess/bench.json``, is on the page once this is run
again.  The page holds no date and names its files relative to the
repository's root, so the same files give the same bytes;
``tests/test_leaderboard.py`` checks that the committed page is what this writes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where the bench results are looked for, and the page, relative to the root.
FOLDER = Path("docs") / "bench"
PAGE = FOLDER / "leaderboard.html"
#: The reference rows, first and in this order; every other result follows.
LEAD = tuple(FOLDER / "v1" / name for name in ("oracle.json", "oracle-visible.json", "random.json"))
BENCH_FORMAT = "agent-envs-bench/1"


def _is_bench(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == BENCH_FORMAT


def inputs(root: Path = ROOT) -> list[Path]:
    """Return every bench result under ``root/docs/bench``, relative to ``root``, in page order."""
    found = sorted(
        path.relative_to(root) for path in (root / FOLDER).rglob("*.json") if _is_bench(path)
    )
    lead = [path for path in LEAD if path in found]
    return lead + [path for path in found if path not in lead]


def build(root: Path = ROOT) -> str:
    """Return the page ``agent-envs report`` makes of :func:`inputs`, run from ``root``."""
    from agent_envs.report import build_report

    paths, here = inputs(root), Path.cwd()
    os.chdir(root)  # the page names its files relative to the root
    try:
        return build_report(paths)
    finally:
        os.chdir(here)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = build() != (ROOT / PAGE).read_text(encoding="utf-8")
        print(f"{PAGE} is {'stale: run python tools/leaderboard.py' if stale else 'up to date'}")
        return int(stale)
    from agent_envs.cli import main as cli

    paths = inputs()
    os.chdir(ROOT)
    return cli(["report", *map(str, paths), "--out", str(PAGE)])


if __name__ == "__main__":
    sys.exit(main())
