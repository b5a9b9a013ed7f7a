"""Seconds per GRPO step with SmolLM2-135M-Instruct on CPU, split into rollout and update.

Setting: the run's env and prompt (``studies.real_llm.setup``: few-shot, bare
actions), T=8, K=8 attempts per task, 16 and 32 episodes a step, LoRA (r=16
on q_proj and v_proj) and full fine-tuning, float32, ``--threads`` torch
threads.  One GRPO step per setting (TRL 1.16, ``beta=0``, micro-batches of
``--micro-batch`` episodes, gradients accumulated over the step).

Prints, per setting:

* the step's seconds, split into the rollout (generation plus env steps,
  inside TRL's ``rollout_func``) and the update (everything else: TRL's
  scoring, loss, backward and optimiser step), with ``train-llm``'s trainer
  (``--trainer shared``: the episodes' shared opening run once per
  micro-batch, ``baselines.llm.training.shared_opening``) or TRL's own (``--trainer
  trl``: every row whole);
* the update's tokens per second (real tokens of the step's sequences), and
  the floor: a bare forward and backward of the same model, on the same
  padded micro-batches (every row whole), with the same completion-only
  log-softmax, plus the optimiser step; the ratio (target: within 1.5x;
  below 1 when the shared opening saves more than the trainer's overhead);
* the rollout against bare batched ``model.generate`` on the same prompts:
  every turn's prompts of the live episodes, left-padded, decoding exactly as
  many tokens as that turn's longest reply (target: within 1.5x).  The
  rollout is replayed once more for this with the per-turn prompts kept
  (``--no-generate-baseline`` skips it).

TRL 1.16 already scores only completion positions: its fused LM head
(``add_fused_lm_head``) projects the hidden states of the positions whose
label is not ignored, in tiles, so the (batch, length, 49152) logits are never
materialised.  The floor does the same work with ``logits_to_keep``.

CPU is scarce: run it with ``nice`` and report the load average it prints.
It imports :mod:`studies.real_llm.setup`, so run it where the project is
installed (``pip install -e .``) or with the repository root on the path:

    nice -n 10 python benchmarks/real_llm_grpo_speed.py --model smollm2-135m
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from studies.real_llm import setup

K = 8
BUDGET = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="folder, .gguf or short name")
    parser.add_argument("--env", default=setup.ENV)
    parser.add_argument("--episodes", default="16,32", help="episodes per step, e.g. 16,32")
    parser.add_argument("--modes", default="lora,full", help="lora, full or both")
    parser.add_argument("--micro-batch", type=int, default=4, help="episodes per backward")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--trainer",
        choices=("shared", "trl"),
        default="shared",
        help="train-llm's (the shared opening once per micro-batch) or TRL's own",
    )
    parser.add_argument(
        "--generate-baseline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time bare model.generate on the rollout's prompts",
    )
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    print(
        f"GRPO on CPU, {args.env}, T={BUDGET}, K={K}, {args.threads} threads, "
        f"{args.trainer} trainer"
    )
    for episodes in [int(n) for n in args.episodes.split(",")]:
        for mode in args.modes.split(","):
            started_load = setup.load_average()
            figures = measure(args, episodes, mode)
            print(
                f"\n{episodes} episodes, {mode} (load average {started_load} -> "
                f"{setup.load_average()}):"
            )
            for line in report(figures):
                print(f"  {line}", flush=True)


def measure(args: argparse.Namespace, episodes: int, mode: str) -> dict[str, float]:
    """Run one GRPO step and its two baselines; return the figures."""
    import torch
    from datasets import Dataset
    from trl import GRPOTrainer

    from baselines.llm.models.lora import LoRASpec, apply_lora
    from baselines.llm.training.grpo import grpo_config
    from baselines.llm.training.rewards import outcome_reward
    from baselines.llm.training.rollout import task_prompt
    from baselines.llm.training.shared_opening import SharedOpeningGRPOTrainer

    model, tokenizer = setup.load(args.model)
    if mode == "lora":
        model = apply_lora(model, LoRASpec(16, targets=setup.LORA_TARGETS))
    runner = setup.rollout(args.env, BUDGET)
    captured: dict[str, object] = {}

    def timed_rollout(prompts, trainer):
        started = time.perf_counter()
        output = runner(prompts, trainer)
        captured["rollout"] = time.perf_counter() - started
        captured["output"] = output
        return output

    micro = min(args.micro_batch, episodes)
    folder = Path(tempfile.mkdtemp(prefix="real-grpo-speed-"))
    trainer_class = SharedOpeningGRPOTrainer if args.trainer == "shared" else GRPOTrainer
    trainer = trainer_class(
        model=model,
        reward_funcs=[outcome_reward],
        args=grpo_config(
            folder,
            max_steps=1,
            num_generations=K,
            per_device_train_batch_size=micro,
            gradient_accumulation_steps=episodes // micro,
            steps_per_generation=episodes // micro,
            learning_rate=1e-5,
            temperature=setup.TEMPERATURE,
            beta=0.0,
            save_strategy="no",
            logging_steps=1,
            disable_tqdm=True,
        ),
        train_dataset=Dataset.from_list([{"prompt": task_prompt(t)} for t in range(64)]),
        processing_class=tokenizer,
        rollout_func=timed_rollout,
    )
    started = time.perf_counter()
    trainer.train()
    step = time.perf_counter() - started
    output = captured["output"]
    figures = {"step": step, "rollout": captured["rollout"], "update": step - captured["rollout"]}
    figures.update(tokens(output))
    figures["floor"] = floor(trainer.model, output, micro, tokenizer.pad_token_id)
    if args.generate_baseline:
        model = trainer.model
        model.eval()
        with torch.no_grad():
            figures.update(rollout_against_generate(model, tokenizer, args.env, output))
    return figures


def tokens(output: dict) -> dict[str, float]:
    """Return the step's real tokens and the padded tokens TRL's tensors hold."""
    prompts, completions = output["prompt_ids"], output["completion_ids"]
    real = sum(len(p) + len(c) for p, c in zip(prompts, completions, strict=True))
    width = max(map(len, prompts)) + max(map(len, completions))
    return {"tokens": real, "padded_tokens": width * len(prompts)}


def floor(model, output: dict, micro: int, pad_id: int) -> float:
    """Return the seconds of a bare forward+backward+step on the step's padded micro-batches."""
    import torch

    from baselines.llm.agents.generation import left_pad

    prompts, completions = output["prompt_ids"], output["completion_ids"]
    prompt_ids, prompt_mask = left_pad(prompts, pad_id)
    width = max(map(len, completions))
    completion_ids = torch.full((len(completions), width), pad_id, dtype=torch.long)
    completion_mask = torch.zeros((len(completions), width), dtype=torch.long)
    for row, ids in enumerate(completions):
        completion_ids[row, : len(ids)] = torch.tensor(ids)
        completion_mask[row, : len(ids)] = 1
    input_ids = torch.cat([prompt_ids, completion_ids], 1)
    mask = torch.cat([prompt_mask, completion_mask], 1)
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=0.0)  # lr 0: time it, change nothing
    model.train()
    started = time.perf_counter()
    for start in range(0, len(prompts), micro):
        rows = slice(start, start + micro)
        logits = model(
            input_ids=input_ids[rows], attention_mask=mask[rows], logits_to_keep=width + 1
        ).logits[:, :-1]
        logps = logits.float().log_softmax(-1).gather(-1, completion_ids[rows, :, None])[..., 0]
        loss = -(logps * completion_mask[rows]).sum() / completion_mask.sum()
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return time.perf_counter() - started


def rollout_against_generate(model, tokenizer, env_id: str, output: dict) -> dict[str, float]:
    """Replay the step's rollout keeping its prompts; time bare ``generate`` on them."""
    from baselines.llm.agents.generation import eos_token_ids, left_pad, reply_decoder

    runner = setup.rollout(env_id, BUDGET)
    tasks = output["task_id"]
    chat = runner.chat_tokens(model, tokenizer)
    eos = eos_token_ids(model, tokenizer)
    generator = runner.hf_generator(model, tokenizer)
    started = time.perf_counter()
    episodes = runner.run(tasks, chat, generator, reply_decoder(tokenizer, eos), keep_prompts=True)
    replay = time.perf_counter() - started
    pad = tokenizer.pad_token_id
    bare = 0.0
    for turn in range(max(e.turns for e in episodes)):
        live = [e for e in episodes if e.turns > turn]
        prompts = [e.turn_prompts[turn] for e in live]
        new = max(_reply_length(e, turn) for e in live)
        input_ids, attention_mask = left_pad(prompts, pad)
        started = time.perf_counter()
        model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            max_new_tokens=new,
            min_new_tokens=new,
            do_sample=True,
            temperature=setup.TEMPERATURE,
            top_k=0,
            top_p=1.0,
            pad_token_id=pad,
        )
        bare += time.perf_counter() - started
    return {"replay": replay, "generate": bare, "turns": sum(e.turns for e in episodes)}


def _reply_length(episode, turn: int) -> int:
    """Return the length of ``episode``'s reply at ``turn`` (its ``turn``-th run of mask 1)."""
    runs, previous = [], 0
    for mask in episode.env_mask:
        if mask and not previous:
            runs.append(0)
        if mask:
            runs[-1] += 1
        previous = mask
    return runs[turn]


def report(f: dict[str, float]) -> list[str]:
    update_rate, floor_rate = f["tokens"] / f["update"], f["tokens"] / f["floor"]
    lines = [
        f"step {f['step']:.1f} s = rollout {f['rollout']:.1f} s + update {f['update']:.1f} s",
        f"tokens {f['tokens']:.0f} real, {f['padded_tokens']:.0f} padded "
        f"({1 - f['tokens'] / f['padded_tokens']:.0%} padding)",
        f"update {update_rate:.0f} tokens/s; floor (bare forward+backward+step on the same "
        f"padded micro-batches) {f['floor']:.1f} s = {floor_rate:.0f} tokens/s; "
        f"update/floor {f['update'] / f['floor']:.2f}x",
    ]
    if "generate" in f:
        lines.append(
            f"rollout replayed with prompts kept: {f['replay']:.1f} s for {f['turns']:.0f} turns; "
            f"bare batched generate on the same prompts and lengths {f['generate']:.1f} s; "
            f"rollout/generate {f['replay'] / f['generate']:.2f}x"
        )
    return lines


if __name__ == "__main__":
    main()
