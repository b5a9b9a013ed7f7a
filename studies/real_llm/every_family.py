"""SmolLM2-135M-Instruct on every family, zero-shot against few-shot (docs/real_llm.md).

For each family (its smallest id), the shipped model plays ``--tasks`` tasks
(ids 0..n-1; few-shot examples come from reserved ids at the top of the id
space, never these) once, greedily, with the dialogue as history, twice:
with no example and with ``--few-shot`` oracle episodes before the real one.
Both ask for the bare action (the "action" reply format and its system
prompt), so the only difference is the examples.  Greedy decoding on these
deterministic envs makes every attempt at a task identical, so one attempt
per task (K=1) says all that more would; FrozenLake here is the deterministic
4x4 lake.  Each run plays T_max (about twice the family's longest oracle
horizon, capped to keep the table short) and, the budget being hidden, also
answers every smaller T of the grid.

Prints one markdown row per family and run, writes each result as JSON and a
heatmap per family (the few-shot surface), and the wall time and load average.

    python -m studies.real_llm.every_family --out docs/real_llm
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import gymnasium as gym

import agent_envs
from agent_envs.evaluation import compare, evaluate
from wrappers.info import chat_stack

gym.register_envs(agent_envs)

#: The smallest id of each family and its longest T: about twice the median oracle
#: horizon, at least the longest one where that is small, capped so that the table runs
#: in well under half an hour on 2 cores.
FAMILIES = {
    "agent_envs/GuessNumber-v0": 12,
    "agent_envs/KnowledgeSearch-v0": 6,
    "agent_envs/WebShop-v0": 8,
    "agent_envs/FrozenLake-v0": 12,
    "agent_envs/Hanoi-3-v0": 12,
    "agent_envs/Wordle-v0": 10,
    "agent_envs/Sokoban-v0": 12,
    "agent_envs/Household-Small-v0": 12,
    "agent_envs/Maze-5x5-v0": 20,
}


def budgets(longest: int) -> list[int]:
    """Four budgets up to ``longest``, read off one hidden-budget run."""
    return sorted({max(1, round(longest * share)) for share in (0.25, 0.5, 0.75, 1.0)})


def load(model: str):
    """Load the model and tokenizer once for every run."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from baselines.llm.models.resolve import resolve_model

    folder = resolve_model(model)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, padding_side="left")
    return AutoModelForCausalLM.from_pretrained(folder, local_files_only=True), tokenizer


def run(loaded, env_id: str, longest: int, few_shot: int, args) -> tuple[object, float]:
    from baselines.llm.agents.hf_agent import HFAgent

    model, tokenizer = loaded
    agent = HFAgent(
        model,
        tokenizer=tokenizer,
        few_shot=few_shot,
        reply_format="action",
        env_id=env_id,
        temperature=0,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.tasks,
    )
    start = time.perf_counter()
    result = evaluate(
        agent,
        lambda: chat_stack(gym.make(env_id), longest),
        ks=[1],
        budgets=budgets(longest),
        tasks=args.tasks,
        samples=1,
        seed=args.seed,
        batch_size=args.tasks,
        agent_name=f"smollm2-135m few_shot={few_shot}",
        env_name=env_id,
        transcripts=args.transcripts,
        log_path=None if args.logs is None else Path(args.logs) / _stem(env_id, few_shot),
    )
    return result, time.perf_counter() - start


def _stem(env_id: str, few_shot: int) -> str:
    return f"{env_id.split('/')[-1]}-{few_shot}shot"


def row(env_id: str, few_shot: int, result, seconds: float) -> str:
    d = result.diagnostics or {}
    recovery = (d.get("error_recovery") or [{}])[-1].get("rate")
    cells = [
        env_id.split("/")[-1],
        str(few_shot),
        f"{result.pass_at(1, max(result.budgets)):.2f}",
        _num(d.get("unparsable_rate")),
        _num(d.get("invalid_action_rate")),
        _num(d.get("decision_quality")),
        _num(recovery),
        f"{seconds:.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


def _num(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--few-shot", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated ids")
    parser.add_argument("--out", default=None, help="folder for JSON results and heatmaps")
    parser.add_argument("--logs", default=None, help="folder for run logs (with --transcripts)")
    parser.add_argument("--transcripts", action="store_true")
    args = parser.parse_args()
    out = None if args.out is None else Path(args.out)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    if args.logs is not None:
        Path(args.logs).mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}")
    total = time.perf_counter()
    loaded = load(args.model)
    print(f"model loaded in {time.perf_counter() - total:.1f} s")
    print(
        "| env | few-shot | Pass@(1,T_max) | unparsable | invalid | decision quality |"
        " recovery (T_max) | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    summary = {}
    for env_id in args.families.split(","):
        longest = FAMILIES[env_id]
        results = {}
        for few_shot in (0, args.few_shot):
            result, seconds = run(loaded, env_id, longest, few_shot, args)
            results[few_shot] = result
            print(row(env_id, few_shot, result, seconds), flush=True)
            summary[_stem(env_id, few_shot)] = {"seconds": seconds, "T": result.budgets}
            if out is not None:
                result.save(out / f"{_stem(env_id, few_shot)}.json")
        if out is not None:
            results[args.few_shot].plot(out / f"{_stem(env_id, args.few_shot)}.png")
            compare(results[args.few_shot], results[0]).save(
                out / f"{env_id.split('/')[-1]}-difference.json"
            )
    wall = time.perf_counter() - total
    print(f"total wall time {wall / 60:.1f} min; load average at end: {os.getloadavg()}")
    if out is not None:
        summary["total_seconds"] = wall
        (out / "timings.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
