"""How fast SmolLM2-135M-Instruct evaluates on a CPU, against this CPU's FLOP limit.

The run measured: GuessNumber with the dialogue as history, 50 tasks x
4 attempts, T=12, one few-shot example, sampled at temperature 1 (four
attempts need four samples), the agents' default reply length.  Every agent
plays the same episodes (same tasks, seeds and prompts; llama.cpp samples
with its own sampler from the quantised weights, so its replies differ).
Targets: at most 5 minutes of wall time on 2 idle cores, CPU per
episode within 2x of the FLOP limit, decoded row-steps at most 1.1x the
needed ones.

Per agent and thread count it prints:

* the load and evaluation times, wall and CPU (``time.process_time``: all
  threads of this process), episodes/s and CPU seconds per episode;
* the tokens read (prompt tokens run through the model: with a kept cache,
  only those added since the episode's last turn; shared openings once) and
  generated (neither agent pads: ``hf`` packs its rows, llama.cpp runs one
  sequence at a time);
* the FLOP limit: ``2 x parameters`` FLOP per token read or generated, at the
  float32 matrix-multiply rate measured in this run (FLOP per CPU-second, at
  the same thread count, on the model's own MLP shape), and the agent's CPU
  against it;
* decoded row-steps (rows computed by the decoding steps) against the needed
  ones (one per generated token);
* Pass@(1,T) and the unparsable and invalid rates;
* with ``--agreement N`` (and llamacpp among the agents), how often
  llama.cpp's quantised weights (the Q4_1 file) give the float32 model's
  greedy reply: both agents at temperature 0 reply at the same N states
  (task i after i mod 4 of the float32 model's own greedy moves), counted
  by equal reply text and by equal action.

``--profile`` prints the top of a cProfile of the first evaluation.  The
machine is shared: run it under ``nice``, read the CPU figures, and quote the
load averages it prints.

    nice python benchmarks/real_llm_speed.py [--tasks 50 --samples 4 --t 12] \\
        [--agents hf,llamacpp] [--threads 1,2] [--profile] [--agreement 20]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import gymnasium as gym

import agent_envs
from agent_envs.evaluation import evaluate
from wrappers.info import chat_stack

gym.register_envs(agent_envs)

ENV = "agent_envs/GuessNumber-v0"


def build(kind: str, args, threads: int):
    common = dict(few_shot=1, temperature=1.0, env_id=ENV, threads=threads)
    if args.max_new_tokens is not None:
        common["max_new_tokens"] = args.max_new_tokens
    if kind == "hf":
        from baselines.llm.agents.hf_agent import HFAgent

        return HFAgent(args.model, batch_size=args.batch, device="cpu", **common)
    from baselines.llm.agents.llamacpp_agent import LlamaCppAgent

    return LlamaCppAgent(args.model, **common)


def matmul_rate(threads: int, width: int, hidden: int) -> float:
    """Return float32 matmul FLOP per CPU-second at ``threads`` threads (one MLP product)."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(256, width), torch.randn(width, hidden)
    torch.mm(a, b)  # warm up
    flop, start = 0, time.process_time()
    while time.process_time() - start < 2.0:
        torch.mm(a, b)
        flop += 2 * a.shape[0] * width * hidden
    return flop / (time.process_time() - start)


def model_shape(name: str) -> tuple[int, int, int]:
    """Return the model's (parameters, hidden size, MLP size), built on the meta device."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from baselines.llm.models.resolve import resolve_model

    folder = resolve_model(name)
    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    params = sum(p.numel() for p in model.parameters())
    text = config.get_text_config()
    return params, text.hidden_size, text.intermediate_size


def evaluate_once(agent, args, profile: bool):
    profiler = cProfile.Profile() if profile else None
    start, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
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
    if profiler is not None:
        profiler.disable()
    return result, time.perf_counter() - start, time.process_time() - cpu, profiler


def counters(agent) -> dict[str, int]:
    """Return the agent's token counters (what it has; zeros for what it lacks)."""
    decoder = getattr(agent, "_decoder", None)
    read = decoder.tokens_read if decoder is not None else getattr(agent, "tokens_read", 0)
    generated = agent.generated_tokens
    return {
        "read": read,
        "generated": generated,
        "decoded": getattr(agent, "decoded_row_steps", generated),
    }


def run(kind: str, threads: int, args, shape, profile: bool) -> None:
    params, width, hidden = shape
    rate = matmul_rate(threads, width, hidden)
    load_start = os.getloadavg()
    start, cpu = time.perf_counter(), time.process_time()
    agent = build(kind, args, threads)
    loaded, load_cpu = time.perf_counter() - start, time.process_time() - cpu
    result, wall, used, profiler = evaluate_once(agent, args, profile)
    n, d = result.episodes, result.diagnostics
    c = counters(agent)
    limit = (c["read"] + c["generated"]) * 2 * params / rate
    print(
        f"\n{kind} with {threads} thread(s): {n} episodes, load average "
        f"{load_start[0]:.2f} -> {os.getloadavg()[0]:.2f}\n"
        f"  load {loaded:.1f} s wall, {load_cpu:.1f} s CPU | eval {wall:.1f} s wall "
        f"= {wall / 60:.2f} min, {used:.1f} s CPU\n"
        f"  {n / wall:.3f} episodes/s | {used / n:.3f} CPU s per episode\n"
        f"  tokens read {c['read']}, generated {c['generated']}\n"
        f"  matmul {rate / 1e9:.1f} GFLOP per CPU-s; FLOP limit {limit:.1f} CPU s "
        f"({(c['read'] + c['generated']) / (limit or 1):.0f} tokens per CPU-s) -> "
        f"{used / limit if limit else float('nan'):.2f}x the limit\n"
        f"  decoded row-steps {c['decoded']} against {c['generated']} needed "
        f"({c['decoded'] / max(c['generated'], 1):.3f}x)\n"
        f"  Pass@(1,{args.t}) {result.pass_at(1, args.t):.3f} | unparsable "
        f"{d['unparsable_rate']:.3f} | invalid {d['invalid_action_rate']:.3f}",
        flush=True,
    )
    if profiler is not None:
        print("  top of the profile (tottime):", flush=True)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile_lines)


def greedy_agreement(args, states: int) -> None:
    """Print how often llama.cpp's quantised weights give the float32 model's greedy reply."""
    from baselines.llm.agents.hf_agent import HFAgent
    from baselines.llm.agents.llamacpp_agent import LlamaCppAgent

    common = dict(few_shot=1, temperature=0.0, env_id=ENV, threads=1)
    reference = HFAgent(args.model, device="cpu", **common)
    quantised = LlamaCppAgent(args.model, **common)
    same_text = same_action = 0
    for task in range(states):
        env = chat_stack(gym.make(ENV), args.t)
        observation, info = env.reset(seed=task, options={"task_id": task})
        for _ in range(task % 4):  # later states: after the float32 model's own moves
            observation, _, terminated, truncated, info = env.step(reference.act(observation, info))
            if terminated or truncated:
                observation, info = env.reset(seed=task, options={"task_id": task})
                break
        ours, theirs = reference.act(observation, info), quantised.act(observation, info)
        same_text += ours.raw == theirs.raw
        same_action += str(ours) == str(theirs)
    print(
        f"\ngreedy replies, llama.cpp ({quantised.name}, its GGUF weights) against hf float32 at "
        f"{states} states: same text {same_text}/{states}, same action {same_action}/{states}",
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
    parser.add_argument("--max-new-tokens", type=int, default=None, help="the agents' default")
    parser.add_argument("--threads", default="1", help="thread counts to run, e.g. 1,2")
    parser.add_argument("--profile", action="store_true", help="profile the first evaluation")
    parser.add_argument("--profile-lines", type=int, default=20)
    parser.add_argument(
        "--agreement", type=int, default=20, help="states for the greedy-reply agreement (0: none)"
    )
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}; {os.cpu_count()} CPUs", flush=True)
    shape = model_shape(args.model)
    print(f"{args.model}: {shape[0] / 1e6:.1f} M parameters", flush=True)
    first = True
    for kind in args.agents.split(","):
        for threads in (int(n) for n in args.threads.split(",")):
            run(kind, threads, args, shape, args.profile and first)
            first = False
    if args.agreement and "llamacpp" in args.agents.split(","):
        greedy_agreement(args, args.agreement)


if __name__ == "__main__":
    main()
