"""The evaluation after ``train-llm``: the saved model, prompted and sampled as training did.

:func:`evaluate_model` evaluates a model that :func:`baselines.llm.training.train.train_llm`
saved, on training's env stack and prompt format; :func:`evaluate_into` writes
that result into a run folder; :func:`eval_command` is the ``agent-envs eval``
line that repeats it, which the run's sidecar records and the command prints.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baselines.llm.prompting.replies import FORMAT_PROMPT
from baselines.llm.training.train_config import LLMTrainConfig

__all__ = ["eval_command", "evaluate_into", "evaluate_model", "id_span", "training_agent"]


def eval_command(config: LLMTrainConfig, out: Path, settings: Any = None) -> str:
    """Return the ``agent-envs eval`` command that evaluates the saved model on its prompts.

    With ``settings`` (the run's :class:`~agent_envs.evaluation.EvalSettings`)
    it repeats that evaluation's tasks, K grid, attempts and budgets; without,
    100 tasks from 10000, K 1,2,4, 4 attempts and the training budgets.
    """
    # On the CPU, as the run's own evaluation (training_agent): a GPU samples otherwise.
    kwargs: dict[str, Any] = {"model": str(out), "prefix_cache": True, "device": "cpu"}
    if config.dtype != "float32":  # evaluated in the format it trained in
        kwargs["dtype"] = config.compute_dtype()
    # The settings the run's policies took; the prompt settings at HFAgent's
    # defaults are left out of the line (temperature and max_new_tokens always show).
    defaults = {"system_prompt": FORMAT_PROMPT, "few_shot": 0, "reply_format": None}
    for name, value in config.policy.keywords().items():
        if name not in defaults or value != defaults[name]:
            kwargs[name] = value
    budgets, ks, samples, tasks = sorted(set(config.budget.budgets)), (1, 2, 4), 4, "10000:10100"
    if settings is not None:
        budgets, ks, samples = settings.budgets, settings.ks, settings.samples
        tasks = _tasks_flag(settings.tasks)
    visible_flag = " --visible-budget" if config.budget.visible else ""
    agent_kwargs = shlex.quote(json.dumps(kwargs))
    return (
        f"agent-envs eval {config.env_id} --agent hf --agent-kwargs {agent_kwargs} "
        f"--history --history-record raw{visible_flag} --t {','.join(map(str, budgets))} "
        f"--k {','.join(map(str, ks))} --samples {samples} --tasks {tasks}"
    )


def _tasks_flag(ids: Sequence[int]) -> str:
    """Return ``--tasks``'s value for ``ids``: a range ``a:b`` when consecutive, else the ids."""
    if _consecutive(ids):
        return f"{ids[0]}:{ids[-1] + 1}"
    return ",".join(map(str, ids))


def _consecutive(ids: Sequence[int]) -> bool:
    """Return whether ``ids`` is a non-empty run ``a, a+1, ..., b``."""
    return bool(ids) and list(ids) == list(range(ids[0], ids[0] + len(ids)))


def training_agent(
    path: str | os.PathLike[str], config: LLMTrainConfig, batch_size: int = 64, seed: int = 0
) -> Any:
    """Return an ``HFAgent`` for the saved model that prompts and samples as training did."""
    from baselines.llm.agents.hf_agent import HFAgent

    return HFAgent(
        str(path),
        env_id=config.env_id,
        batch_size=batch_size,
        seed=seed,
        device="cpu",
        prefix_cache=True,  # the same samples, several times faster on long histories
        dtype=config.compute_dtype(),
        **config.policy.keywords(),
    )


def evaluate_model(
    path: str | os.PathLike[str],
    config: LLMTrainConfig,
    *,
    budgets: Sequence[int],
    tasks: Sequence[int],
    samples: int = 4,
    ks: Sequence[int] = (1, 2, 4),
    seed: int = 0,
    batch_size: int = 64,
    log_path: str | os.PathLike[str] | None = None,
    progress: bool = False,
    step_quality: int = 0,
    step_quality_seed: int = 0,
    transcripts: bool = False,
) -> Any:
    """Evaluate the saved model with ``evaluate`` on the training prompt format.

    The env stack is training's (:data:`baselines.llm.training.rollout.TRAINING_STACK`:
    ``ChatHistory(record="raw")`` outside the budget) and the agent an
    ``HFAgent`` with the training settings, so every prompt is built as in
    training.  ``step_quality`` also judges the
    model on that many shared reference states per task, drawn with
    ``step_quality_seed`` (the study's, never the training seed, so every seed
    meets the same states).  ``transcripts`` also writes every observation and
    action to ``log_path``.  Returns the :class:`agent_envs.evaluation.EvalResult`.
    """
    from agent_envs.env_stack import StackRecipe
    from agent_envs.evaluation import evaluate
    from baselines.llm.training.rollout import TRAINING_STACK

    agent = training_agent(path, config, batch_size, seed)
    extra = {
        "step_quality": step_quality,
        "step_quality_seed": step_quality_seed,
        "transcripts": transcripts,
    }
    return evaluate(
        agent,
        StackRecipe(config.env_id, TRAINING_STACK),
        ks=[k for k in ks if k <= samples],
        budgets=budgets,
        tasks=list(tasks),
        samples=samples,
        seed=seed,
        visible_budget=config.budget.visible,
        batch_size=batch_size,
        log_path=log_path,
        progress=progress,
        agent_name=f"hf {Path(path).name}",
        env_name=config.env_id,
        **extra,
    )


def evaluate_into(model: Path, out: Path, config: LLMTrainConfig, settings: Any) -> None:
    """Evaluate the model saved in ``model``; its log ``out/episodes.jsonl`` lets --resume go on."""
    result = evaluate_model(
        model,
        config,
        budgets=settings.budgets,
        tasks=settings.tasks,
        samples=settings.samples,
        ks=settings.ks,
        seed=config.seed,
        log_path=out / "episodes.jsonl",
    )
    print(result.table())
    result.save(out / "result.json")
    print(f"wrote {out / 'result.json'}")


def id_span(ids: Sequence[int]) -> str:
    """Return ids as a user reads them: ``ids a..b`` when consecutive, else their count."""
    if not ids:
        return ""
    if _consecutive(ids):
        return f"ids {ids[0]}..{ids[-1]}"
    return f"{len(ids)} ids"
