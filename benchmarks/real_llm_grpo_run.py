"""A short GRPO run of SmolLM2-135M-Instruct on CPU, with held-out Pass@(1,T) before and after.

The prompt and rollout are ``real_llm_setup``'s (few-shot oracle examples,
bare actions, the run's env).  Training: LoRA (``--lora`` rank on q_proj and
v_proj of the last ``--lora-layers`` layers), K attempts at ``--tasks-per-step``
tasks a step (task ids 0..63), the outcome reward, ``beta=0``.  Every step it
logs the training success rate, the invalid-reply rate, the share of GRPO
groups whose rewards have zero variance (they carry no gradient), the mean
reward, the loss and the step's seconds, to stdout and to ``--out``/log.jsonl.

Before and after, it evaluates on held-out tasks (``--eval-samples`` sampled
attempts each, at the training temperature ``--temperature``, T = the
training budget) with ``HFAgent`` on the training prompt, and writes
``before.json`` and ``after.json`` (``EvalResult.save``).  ``--skip-before``
reuses a ``before.json`` already in ``--out``.  The tasks: on
GuessNumber-20-v0, whose 20 tasks are its 20 secrets, the LLM study's split
(training ids whose secret is not one of the 10 held-out secrets, one
evaluation id per held-out secret); elsewhere ids 0..63 for training and
``--eval-tasks`` ids from 10000 for evaluation.

    nice -n 10 python benchmarks/real_llm_grpo_run.py --model smollm2-135m --steps 30 \
        --out runs/real-grpo
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import real_llm_setup as setup

TRAIN_TASKS = 64


def task_split(env_id: str, eval_tasks: int) -> tuple[list[int], list[int]]:
    """Return the training and the held-out evaluation task ids of ``env_id``."""
    import llm_budgetmix_study as study

    if env_id == study.ENV_ID:
        return study.split_tasks(TRAIN_TASKS, study.EVAL_SECRETS)
    return list(range(TRAIN_TASKS)), list(range(10_000, 10_000 + eval_tasks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="folder, .gguf or short name")
    parser.add_argument("--env", default=setup.ENV)
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30, help="0: evaluate before only")
    parser.add_argument(
        "--max-minutes", type=float, default=None, help="stop GRPO after the step that passes this"
    )
    parser.add_argument("--k", type=int, default=8, help="attempts per task (group size)")
    parser.add_argument("--tasks-per-step", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--temperature", type=float, default=setup.TEMPERATURE)
    parser.add_argument("--max-new-tokens", type=int, default=setup.MAX_NEW_TOKENS)
    parser.add_argument("--few-shot", type=int, default=setup.FEW_SHOT, help="oracle examples")
    parser.add_argument("--lora", type=int, default=16)
    parser.add_argument("--lora-layers", type=int, default=None)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--eval-tasks", type=int, default=16)
    parser.add_argument("--eval-samples", type=int, default=2)
    parser.add_argument("--skip-before", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/real-grpo"))
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    folder = setup.model_folder(args.model)
    print(f"load average at start: {setup.load_average()}", flush=True)
    if not (args.skip_before and (args.out / "before.json").exists()):
        evaluate(folder, args, args.out / "before.json")
    if args.steps == 0:
        return
    trained = train(folder, args)
    evaluate(str(trained), args, args.out / "after.json")
    print(f"load average at the end: {setup.load_average()}", flush=True)


def evaluate(folder: str, args: argparse.Namespace, path: Path) -> None:
    """Evaluate ``folder`` on the held-out tasks; save and print the result."""
    import gymnasium as gym

    from agent_envs.evaluation import evaluate as run_evaluation
    from wrappers.chat_history import chat_stack

    started = time.perf_counter()
    agent = setup.agent(
        folder,
        args.env,
        few_shot=args.few_shot,
        batch_size=32,
        seed=args.seed,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
    )
    result = run_evaluation(
        agent,
        lambda: chat_stack(gym.make(args.env), args.budget, record="raw"),
        ks=[1],
        budgets=[args.budget],
        tasks=task_split(args.env, args.eval_tasks)[1],
        samples=args.eval_samples,
        seed=args.seed,
        batch_size=32,
        log_path=path.with_suffix(".jsonl"),
    )
    result.save(path)
    print(result.table())
    print(f"{path.name}: {time.perf_counter() - started:.0f} s", flush=True)


def train(folder: str, args: argparse.Namespace) -> Path:
    """Run GRPO with LoRA; save the merged model in ``args.out / "model"``; return that."""
    from datasets import Dataset
    from transformers import TrainerCallback, set_seed
    from trl import GRPOTrainer

    from baselines.llm.lora import LoRASpec, apply_lora, save_model
    from baselines.llm.rewards import outcome_reward
    from baselines.llm.tasks import task_prompt
    from baselines.llm.train import grpo_config

    set_seed(args.seed)
    model, tokenizer = setup.load(folder)
    spec = LoRASpec(args.lora, targets=setup.LORA_TARGETS, layers=args.lora_layers)
    model = apply_lora(model, spec)
    episodes = args.k * args.tasks_per_step
    micro = min(args.micro_batch, episodes)
    log_path = args.out / "log.jsonl"
    log_path.write_text("")

    deadline = None if args.max_minutes is None else time.time() + 60 * args.max_minutes

    class StepLog(TrainerCallback):
        def on_step_end(self, _args, state, control, **kwargs):
            if deadline is not None and time.time() > deadline:
                control.should_training_stop = True  # the CPU budget is spent

        def on_log(self, _args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            entry = {
                "step": state.global_step,
                "success": logs.get("episodes/success"),
                "invalid_rate": logs.get("episodes/invalid_rate"),
                "zero_std_groups": logs.get("frac_reward_zero_std"),
                "turns": logs.get("episodes/turns"),
                "reward": logs.get("reward"),
                "loss": logs.get("loss"),
                "seconds": logs.get("step_time"),
                "load": setup.load_average(),
            }
            with log_path.open("a") as handle:
                handle.write(json.dumps(entry) + "\n")
            print(" ".join(f"{k} {v}" for k, v in entry.items()), flush=True)

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[outcome_reward],
        args=grpo_config(
            args.out / "checkpoints",
            max_steps=args.steps,
            num_generations=args.k,
            per_device_train_batch_size=micro,
            gradient_accumulation_steps=episodes // micro,
            steps_per_generation=episodes // micro,
            learning_rate=args.lr,
            lr_scheduler_type="constant",
            temperature=args.temperature,
            beta=0.0,
            save_strategy="no",
            logging_steps=1,
            seed=args.seed,
            disable_tqdm=True,
        ),
        train_dataset=Dataset.from_list(
            [{"prompt": task_prompt(t)} for t in task_split(args.env, args.eval_tasks)[0]]
        ),
        processing_class=tokenizer,
        rollout_func=setup.rollout(
            args.env,
            args.budget,
            seed=args.seed,
            few_shot=args.few_shot,
            temperature=args.temperature,
            max_new_tokens=args.max_new_tokens,
        ),
        callbacks=[StepLog()],
    )
    started = time.perf_counter()
    trainer.train()
    steps = trainer.state.global_step
    print(f"GRPO: {steps} steps in {time.perf_counter() - started:.0f} s", flush=True)
    out = args.out / "model"
    save_model(trainer.model, out)
    tokenizer.save_pretrained(out)
    return out


if __name__ == "__main__":
    main()
