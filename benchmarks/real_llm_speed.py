"""How fast SmolLM2-135M-Instruct evaluates on a CPU: HFAgent against LlamaCppAgent.

The run the issue sizes: GuessNumber with the dialogue as history, 50 tasks x
4 attempts, T=12, one few-shot example, sampled at temperature 1 (four
attempts need four samples).  Both agents play the same episodes (same
tasks, seeds and prompts; the samples differ: llama.cpp has its own sampler
and runs the quantised weights).  Target: at most 5 minutes of wall time on
2 idle cores for the faster one.

It prints, per agent: the load time, the wall time of the evaluation,
episodes/s, generated tokens/s, and the unparsable and invalid rates.  For
the HF agent it also replays the prompts of its first turns through one bare
batched ``model.generate`` per turn (left padding, no prefix cache, no stop at
the action line, as many new tokens as the longest reply of that turn) and
prints that tokens/s, so the engine's gain is visible.

    python benchmarks/real_llm_speed.py [--tasks 50 --samples 4 --t 12] [--agents hf,llamacpp]
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym

import agent_envs
from agent_envs.evaluation import evaluate
from wrappers.chat_history import chat_stack

gym.register_envs(agent_envs)

ENV = "agent_envs/GuessNumber-v0"


def build(kind: str, args):
    common = dict(few_shot=1, temperature=1.0, max_new_tokens=args.max_new_tokens, env_id=ENV)
    if kind == "hf":
        from baselines.llm.hf_agent import HFAgent

        return HFAgent(args.model, batch_size=args.batch, device="cpu", **common)
    from baselines.llm.llamacpp_agent import LlamaCppAgent

    return LlamaCppAgent(args.model, threads=args.threads, **common)


class PromptLog:
    """Record the prompts of each ``act_batch`` call (one list per turn of the batch)."""

    def __init__(self, agent, turns: int) -> None:
        self.calls: list[list[list[int]]] = []
        self.turns = turns
        act_batch, prompt_ids = agent.act_batch, agent.prompt_ids

        def record_batch(observations, infos):
            if len(self.calls) < self.turns:
                pairs = zip(observations, infos, strict=True)
                self.calls.append([prompt_ids(o, i) for o, i in pairs])
            return act_batch(observations, infos)

        agent.act_batch = record_batch


def bare_generate(agent, calls: list[list[list[int]]], new_tokens: int) -> tuple[int, float]:
    """Time one plain batched ``model.generate`` per recorded turn; return (tokens, seconds)."""
    from baselines.llm.generation import generate_replies

    tokens, start = 0, time.perf_counter()
    for prompts in calls:
        for first in range(0, len(prompts), agent.batch_size):
            batch = prompts[first : first + agent.batch_size]
            pad = agent.tokenizer.pad_token_id or agent.tokenizer.eos_token_id
            eos = [agent.tokenizer.eos_token_id]
            replies = generate_replies(agent.model, batch, pad, eos, new_tokens)
            tokens += sum(len(reply) for reply in replies)
    return tokens, time.perf_counter() - start


def run(kind: str, args) -> None:
    start = time.perf_counter()
    agent = build(kind, args)
    loaded = time.perf_counter() - start
    log = PromptLog(agent, args.replay_turns) if kind == "hf" else None
    start = time.perf_counter()
    result = evaluate(
        agent,
        lambda: chat_stack(gym.make(ENV), args.t),
        ks=[1, args.samples],
        budgets=[args.t],
        tasks=args.tasks,
        samples=args.samples,
        batch_size=args.batch,
        n_bootstrap=200,
    )
    wall = time.perf_counter() - start
    d = result.diagnostics
    print(
        f"{kind:9s} load {loaded:6.1f} s | eval {wall:6.1f} s = {wall / 60:.2f} min | "
        f"{result.episodes / wall:6.2f} episodes/s | {agent.generated_tokens / wall:7.1f} "
        f"generated tokens/s | Pass@(1,{args.t}) {result.pass_at(1, args.t):.3f} | "
        f"unparsable {d['unparsable_rate']:.3f} | invalid {d['invalid_action_rate']:.3f} | "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    if log is not None and log.calls:
        turns = len(log.calls)
        tokens, seconds = bare_generate(agent, log.calls, args.max_new_tokens)
        print(
            f"{'':9s} bare batched model.generate on the prompts of the first {turns} turns "
            f"({args.max_new_tokens} new tokens each, no cache, no stop): {tokens / seconds:7.1f} "
            f"tokens/s ({seconds:.1f} s)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--agents", default="hf,llamacpp")
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--t", type=int, default=12)
    parser.add_argument("--batch", type=int, default=50, help="episodes in lockstep (HF batch)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    parser.add_argument("--replay-turns", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}; {os.cpu_count()} CPUs", flush=True)
    for kind in args.agents.split(","):
        run(kind, args)


if __name__ == "__main__":
    main()
