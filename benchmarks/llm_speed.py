"""How much batching buys HFAgent: episodes/s and generated tokens/s by batch size.

Runs ``HFAgent`` on the tiny GPT-2 of the tests (built offline in a temporary
folder, as in ``tests/llm_fixtures.py``) through the evaluator on a 10-turn
env (GuessNumber under a 10-turn budget; the untrained model never wins, so
every episode plays all 10 turns).  Batch size 1 is one episode at a time; at
batch size B the evaluator keeps B episodes in lockstep and the agent makes
one ``generate`` call per turn for all of them.

Target: batch 32 gives at least 5x the episodes/s of batch 1 on 2 CPU cores.

Run:  python benchmarks/llm_speed.py [--threads 1] [--episodes 64] [--max-new-tokens 16]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# The tiny-model builder lives with the tests, so benchmark and tests share one copy.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from llm_fixtures import build_tiny_model

from agent_envs.evaluation import evaluate
from baselines.llm.agents.hf_agent import HFAgent

BATCH_SIZES = (1, 8, 32)
TURNS = 10


def measure(path: Path, batch_size: int, episodes: int, max_new_tokens: int) -> dict:
    """Evaluate ``episodes`` episodes at ``batch_size``; return the rates."""
    agent = HFAgent(
        str(path), max_new_tokens=max_new_tokens, batch_size=batch_size, device="cpu", seed=0
    )
    start = time.perf_counter()
    result = evaluate(
        agent,
        "agent_envs/GuessNumber-v0",
        ks=[1],
        budgets=[TURNS],
        tasks=episodes,
        batch_size=batch_size,
        diagnostics=False,
        n_bootstrap=10,
    )
    elapsed = time.perf_counter() - start
    return {
        "batch_size": batch_size,
        "episodes": result.episodes,
        "turns": result.timing["env_steps"],
        "seconds": elapsed,
        "episodes_per_s": result.episodes / elapsed,
        "tokens_per_s": agent.generated_tokens / elapsed,
        "errors": result.errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64, help="episodes per batched setting")
    parser.add_argument(
        "--single-episodes", type=int, default=16, help="episodes at batch size 1 (slow)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's choice)"
    )
    args = parser.parse_args()

    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as folder:
        path = build_tiny_model(folder)
        print(
            f"HFAgent on the tiny GPT-2 (2 layers, 32 wide), GuessNumber-v0 with T={TURNS}, "
            f"max_new_tokens={args.max_new_tokens}, torch threads={torch.get_num_threads()}"
        )
        measure(path, 8, 8, args.max_new_tokens)  # warm-up: imports, first-call overheads
        rows = []
        for batch_size in BATCH_SIZES:
            episodes = args.single_episodes if batch_size == 1 else args.episodes
            rows.append(measure(path, batch_size, episodes, args.max_new_tokens))
    header = ("batch", "episodes", "turns", "seconds", "ep/s", "tok/s", "x")
    print(
        " ".join(
            f"{name:>{width}}" for name, width in zip(header, (5, 8, 6, 8, 8, 9, 6), strict=True)
        )
    )
    base = rows[0]["episodes_per_s"]
    for row in rows:
        print(
            f"{row['batch_size']:>5} {row['episodes']:>8} {row['turns']:>6} {row['seconds']:>8.2f} "
            f"{row['episodes_per_s']:>8.2f} {row['tokens_per_s']:>9.0f} "
            f"{row['episodes_per_s'] / base:>5.1f}x"
        )
    speedup = rows[-1]["episodes_per_s"] / base
    verdict = "meets" if speedup >= 5 else "misses"
    print(f"batch {BATCH_SIZES[-1]} vs 1: {speedup:.1f}x episodes/s ({verdict} the 5x target)")


if __name__ == "__main__":
    main()
