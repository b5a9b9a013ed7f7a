"""Few-shot success of SmolLM2-135M-Instruct on held-out tasks: how the GRPO run's env was picked.

It evaluates the base model with ``HFAgent`` on the training prompt of
:mod:`studies.real_llm.setup` (few-shot oracle examples, bare actions, temperature
``--temperature``) at T = ``--budget``, ``--eval-samples`` sampled attempts
per held-out task, and writes ``before.json`` (``EvalResult.save``) and its
episode log into ``--out``.  The tasks: on GuessNumber-20-v0, whose 20 tasks
are its 20 secrets, one evaluation id per held-out secret of the LLM study's
split (``studies.llm_budgetmix.design.split_tasks``); elsewhere ``--eval-tasks`` ids
from 10000.  The run itself is ``agent-envs train-llm`` (docs/real_llm.md).

    python -m studies.real_llm.pick --env agent_envs/GuessNumber-20-v0 --eval-samples 8 \
        --threads 2 --out runs/pick-gn20
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from studies.real_llm import setup


def held_out_tasks(env_id: str, count: int) -> list[int]:
    """Return the held-out evaluation task ids of ``env_id`` (see the module docstring)."""
    from studies.llm_budgetmix import design as study

    if env_id == study.ENV_ID:
        return study.split_tasks(64, study.EVAL_SECRETS)[1]
    return list(range(10_000, 10_000 + count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="folder, .gguf or short name")
    parser.add_argument("--env", default=setup.ENV)
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=setup.TEMPERATURE)
    parser.add_argument("--max-new-tokens", type=int, default=setup.MAX_NEW_TOKENS)
    parser.add_argument("--few-shot", type=int, default=setup.FEW_SHOT, help="oracle examples")
    parser.add_argument("--eval-tasks", type=int, default=16)
    parser.add_argument("--eval-samples", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/pick"))
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {setup.load_average()}", flush=True)
    evaluate(setup.model_folder(args.model), args, args.out / "before.json")


def evaluate(folder: str, args: argparse.Namespace, path: Path) -> None:
    """Evaluate ``folder`` on the held-out tasks; save and print the result."""
    import gymnasium as gym

    from agent_envs.evaluation import evaluate as run_evaluation
    from wrappers.info import chat_stack

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
        tasks=held_out_tasks(args.env, args.eval_tasks),
        samples=args.eval_samples,
        seed=args.seed,
        batch_size=32,
        log_path=path.with_suffix(".jsonl"),
    )
    result.save(path)
    print(result.table())
    print(f"{path.name}: {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
