"""Seconds per GRPO step on CPU with the tiny model, and what batched generation buys.

Setting: GuessNumber, T=8, 32 episodes a step (K=8 attempts at 4 tasks), the
tiny Llama of ``baselines.llm.models.tiny`` after a short warm start (so that its
replies are well formed and most episodes run their 8 turns), 1 torch thread.

Prints:

* seconds per GRPO step (median of ``--steps`` steps after one warm-up step)
  and the share of it spent in the rollout (generation plus env steps);
* the rollout of the same 32 episodes four ways: batched (one call per turn
  for all live episodes) or one episode per call, each with the prefix cache
  (``baselines.llm.agents.prefix_cache``: a turn runs only the tokens added since the
  last one) or with plain ``model.generate`` (which re-reads the whole
  dialogue every turn).  For each: the whole rollout's seconds and the part
  spent generating (the rest is env steps and building prompts, the same every
  way); the speedups; and whether every way played identical episodes (the
  seeded per-row sampler makes batching invisible to the episodes).

Targets: at most 2 s a step; batched at least 5x faster.

    python benchmarks/llm_grpo_speed.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

ENV = "agent_envs/GuessNumber-v0"
TASKS = (0, 1, 2, 3)
K = 8
BUDGET = 8
#: (name, episodes per call (None: all live ones), prefix cache).
MODES = (
    ("batched, prefix cache", None, True),
    ("one at a time, prefix cache", 1, True),
    ("batched, generate()", None, False),
    ("one at a time, generate()", 1, False),
)
SPEEDUPS = (
    ("one at a time, prefix cache", "batched, prefix cache"),
    ("one at a time, generate()", "batched, prefix cache"),
    ("one at a time, generate()", "batched, generate()"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5, help="timed GRPO steps")
    parser.add_argument("--warm-start", type=int, default=40, help="warm-start steps")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agent_envs.env_stack import BudgetRegime
    from baselines.llm.agents.generation import HFGenerator, eos_token_ids, reply_decoder
    from baselines.llm.models.tiny import build_tiny_model
    from baselines.llm.training.grpo import grpo_config
    from baselines.llm.training.rewards import outcome_reward
    from baselines.llm.training.rollout import EpisodeRollout, task_prompt
    from baselines.llm.training.shared_opening import SharedOpeningGRPOTrainer
    from baselines.llm.training.train_config import PolicySettings, RolloutSettings
    from baselines.llm.training.warm_start import demonstrations, warm_start

    folder = Path(tempfile.mkdtemp(prefix="grpo-speed-"))
    path = build_tiny_model(folder / "tiny", ENV)
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path)

    def rollout() -> EpisodeRollout:
        policy = PolicySettings(max_new_tokens=8)
        return EpisodeRollout(RolloutSettings(ENV, BudgetRegime.fixed(BUDGET), policy, seed=0))

    rows = demonstrations(model, tokenizer, rollout(), range(16), 2)
    model = warm_start(
        model, tokenizer, rows, args.warm_start, batch_size=8, output_dir=str(folder)
    )
    model.eval()

    # Batched vs one at a time, with and without the prefix cache: the same 32 episodes.
    tasks = [task for task in TASKS for _ in range(K)]
    eos = eos_token_ids(model, tokenizer)
    timings, generating, played = {}, {}, {}
    for name, batch_size, cache in MODES:
        runner = rollout()
        generator = HFGenerator(model, tokenizer, runner, batch_size, prefix_cache=cache)
        spent = [0.0]

        def generate(episodes, prompts, generator=generator, spent=spent):
            started = time.perf_counter()
            replies = generator(episodes, prompts)
            spent[0] += time.perf_counter() - started
            return replies

        started = time.perf_counter()
        episodes = runner.run(
            tasks, runner.chat_tokens(model, tokenizer), generate, reply_decoder(tokenizer, eos)
        )
        timings[name] = time.perf_counter() - started
        generating[name] = spent[0]
        played[name] = [(e.completion_ids, e.success) for e in episodes]
    turns = sum(e.turns for e in episodes)

    # GRPO steps.
    runner = rollout()
    rollout_seconds: list[float] = []

    def timed_rollout(prompts, trainer):
        started = time.perf_counter()
        output = runner(prompts, trainer)
        rollout_seconds.append(time.perf_counter() - started)
        return output

    config = grpo_config(
        folder / "grpo",
        max_steps=args.steps + 1,
        num_generations=K,
        per_device_train_batch_size=K * len(TASKS),
        learning_rate=5e-4,
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
    )
    trainer = SharedOpeningGRPOTrainer(  # train-llm's trainer
        model=model,
        reward_funcs=[outcome_reward],
        args=config,
        train_dataset=Dataset.from_list([{"prompt": task_prompt(t)} for t in TASKS]),
        processing_class=tokenizer,
        rollout_func=timed_rollout,
    )
    step_seconds: list[float] = []
    original = trainer.training_step

    def timed_step(*step_args, **step_kwargs):
        started = time.perf_counter()
        loss = original(*step_args, **step_kwargs)
        step_seconds.append(time.perf_counter() - started)
        return loss

    trainer.training_step = timed_step
    trainer.train()

    steps, rollouts = step_seconds[1:], rollout_seconds[1:]
    step = statistics.median(steps)
    share = sum(rollouts) / sum(steps)
    print(f"GRPO step on CPU (1 thread), {K * len(TASKS)} episodes, T={BUDGET}, tiny Llama:")
    print(f"  seconds per step: median {step:.2f} (min {min(steps):.2f}, max {max(steps):.2f})")
    print(f"  rollout (generation + env) share of the step: {share:.0%}")
    print(f"Rollout of the same {len(tasks)} episodes ({turns} turns), seconds:")
    print(f"  {'mode':<34} {'rollout':>8} {'generation':>11}")
    for name, _, _ in MODES:
        print(f"  {name:<34} {timings[name]:>8.2f} {generating[name]:>11.2f}")
    for slow, fast in SPEEDUPS:
        print(
            f"  {fast} vs {slow}: rollout {timings[slow] / timings[fast]:.1f}x, "
            f"generation {generating[slow] / generating[fast]:.1f}x"
        )
    reference = played[MODES[0][0]]
    print(f"  identical episodes every way: {all(p == reference for p in played.values())}")


if __name__ == "__main__":
    main()
