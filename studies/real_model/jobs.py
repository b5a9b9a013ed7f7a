"""The real-model study's jobs: GRPO with LoRA from the base model, then the evaluation.

:func:`run_job` is the job function handed to :func:`studies.runner.run_jobs`.
A job's model and logs go to its ``run`` folder (under ``--work``, never
committed); what the runner writes atomically into the study folder is small
JSON: the model's hash, the GRPO log and the whole evaluation.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from studies.real_model import design
from studies.real_model.moves import move_mix
from studies.runner import Job


def setup_process(device: str, threads: int) -> None:
    """Pin this process to ``device`` (``cpu`` hides every GPU) and ``threads`` torch threads."""
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch first looks
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch

    torch.set_num_threads(threads)


def train_config(job: Job, budget: Any) -> Any:
    """Return the ``LLMTrainConfig`` of one job (the base model's, with 0 steps, for ``base``).

    A setting the job's settings leave out takes the v3 design's value, so a
    later version (``studies.real_model_v4``) runs the same jobs with its own.
    """
    from agent_envs.env_stack import BudgetRegime
    from baselines.llm.training.train import LLMTrainConfig

    s = job.settings
    quick = s["quick"]  # the tiny model, built and warm-started first
    lora = s.get("lora", {"rank": design.LORA_RANK, "targets": list(design.LORA_TARGETS)})
    return LLMTrainConfig(
        s["env_id"],
        budget or BudgetRegime.fixed(s.get("t_grid", design.T_GRID)[-1]),
        model=s["base_model"],
        tasks=tuple(s["train_tasks"]),
        k=s["k"],
        tasks_per_step=s["tasks_per_step"],
        steps=s["steps"] if budget else 0,
        learning_rate=s.get("learning_rate", design.LEARNING_RATE),
        warm_start=0,
        process_reward=s.get("process_reward", 0.0),
        seed=job.seed,
        few_shot=s["few_shot"],
        temperature=s.get("temperature", design.TEMPERATURE),
        max_new_tokens=s.get("max_new_tokens", design.MAX_NEW_TOKENS),
        beta=s.get("beta", design.BETA),
        lora=None
        if quick
        else lora_spec(s.get("lora_layers", design.LORA_LAYERS), lora["rank"], lora["targets"]),
        micro_batch=s.get("micro_batch", design.MICRO_BATCH),
        collapse_invalid=s.get("collapse_invalid", design.COLLAPSE_INVALID),
        reward=s.get("reward", "outcome"),
        # float32 unless the settings name another (the v3 study ran float32).
        dtype=s.get("dtype", "float32"),
    )


def lora_spec(
    layers: int | None, rank: int = design.LORA_RANK, targets: Any = design.LORA_TARGETS
) -> Any:
    """Return the study's LoRA adapters on the top ``layers`` layers (``None``: every layer)."""
    from baselines.llm.models.lora import LoRASpec

    return LoRASpec(rank, targets=tuple(targets), layers=layers)


def model_hash(folder: Path) -> str:
    """SHA-256 over the weight files of a saved model (names and bytes, in name order)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".safetensors", ".bin") and path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def warm_start_job(job: Job) -> dict[str, Any]:
    """``--quick`` only: build the tiny model and warm-start it (the base of every regime)."""
    from agent_envs.env_stack import BudgetRegime
    from baselines.llm.training.train import LLMTrainConfig, train_llm

    setup_process(job.settings["device"], 1)
    s, started = job.settings, time.perf_counter()
    config = LLMTrainConfig(
        s["env_id"],
        BudgetRegime.fixed(design.LONG),
        tasks=tuple(s["train_tasks"]),
        warm_start=s["warm_start"],
        steps=0,
        seed=0,
    )
    train_llm(config, s["run"], log=lambda line: print(f"[base] {line}", flush=True))
    return {
        "model_sha256": model_hash(Path(s["run"])),
        "seconds": round(time.perf_counter() - started, 1),
    }


def _train(job: Job, config: Any, run: Path) -> list[dict]:
    """GRPO from the base model (unless this run trained before a stop); the per-step log."""
    from baselines.llm.training.train import train_llm

    if not (run / "train_llm.json").exists():
        prefix = f"[{job.regime} seed {job.seed}]"
        train_llm(config, run, log=lambda line: print(f"{prefix} {line}", flush=True))
    return json.loads((run / "train_llm.json").read_text())["log"]


def run_job(job: Job) -> dict[str, Any]:
    """Train one (regime, seed) from the base model and evaluate it on the held-out grid."""
    from agent_envs.env_stack import BudgetRegime
    from baselines.llm.training.train import evaluate_model

    s, cpu = job.settings, time.process_time()
    setup_process(s["device"], s["threads"])
    budget = BudgetRegime(**s["budget"]) if s["budget"] else None
    config, run = train_config(job, budget), Path(s["run"])
    started = time.perf_counter()
    log = _train(job, config, run) if budget else []
    trained, started = time.perf_counter() - started, time.perf_counter()
    model = run if budget else Path(s["base_path"])
    result = evaluate_model(
        model,
        config,
        budgets=s["t_grid"],
        tasks=s["eval_tasks"],
        samples=s["samples"],
        ks=[k for k in s.get("ks", design.KS) if k <= s["samples"]],
        seed=job.seed,
        log_path=run / "episodes.jsonl",
        step_quality=s["step_quality"],
        step_quality_seed=s.get("step_quality_seed", design.STEP_QUALITY_SEED),
        transcripts=True,
    )
    cpu = time.process_time() - cpu  # this process's CPU, every thread, for this job alone
    return {
        "model_sha256": model_hash(model),
        "train_log": log,
        "stopped": _stopped(run) if budget else None,
        "result": result.to_dict(),
        "moves": move_mix(_transcripts(run / "episodes.jsonl")),
        "seconds": {
            "train": round(trained, 1),
            "eval": round(time.perf_counter() - started, 1),
            "process_cpu": round(cpu, 1),
        },
    }


def _transcripts(log: Path) -> list[dict]:
    """Return the transcripts of a run log's episodes."""
    lines = log.read_text(encoding="utf-8").splitlines()
    records = (json.loads(line) for line in lines if line.strip())
    return [record["transcript"] for record in records if "transcript" in record]


def _stopped(run: Path) -> dict | None:
    """Return what the collapse guard recorded when it stopped GRPO, or None."""
    return json.loads((run / "train_llm.json").read_text()).get("stopped")


def pilot_job(job: Job) -> dict[str, Any]:
    """The calibration pilot on some training tasks: the base model, K=1, on the settings'
    ``pilot_t_grid`` (v3's ``PILOT_T_GRID`` by default)."""
    from baselines.llm.training.train import evaluate_model

    s, cpu = job.settings, time.process_time()
    setup_process(s["device"], s["threads"])
    config = train_config(job, None)
    result = evaluate_model(
        s["base_path"],
        config,
        budgets=s.get("pilot_t_grid", design.PILOT_T_GRID),
        tasks=s["tasks"],
        samples=s["pilot_samples"],
        ks=[1],
        seed=0,
    )
    return {"result": result.to_dict(), "seconds": {"process_cpu": time.process_time() - cpu}}
