"""The GRPO dataset's prompts: each names one task, which the rollout plays.

TRL's ``GRPOTrainer`` hands a rollout dataset prompts, not env states; the
rollout reads the task id back out of each prompt (:func:`task_of`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["task_of", "task_prompt"]

_TASK_PREFIX = "agent_envs task "


def task_prompt(task_id: int) -> str:
    """Return the dataset prompt that names ``task_id`` (the rollout reads it back).

    >>> task_of(task_prompt(17))
    17
    """
    return f"{_TASK_PREFIX}{int(task_id)}"


def task_of(prompt: Any) -> int:
    """Return the task id a dataset prompt names; ``ValueError`` for any other prompt."""
    if isinstance(prompt, str) and prompt.startswith(_TASK_PREFIX):
        number = prompt[len(_TASK_PREFIX) :]
        if number.isdigit():
            return int(number)
    raise ValueError(
        f"EpisodeRollout needs prompts made by task_prompt(task_id), such as "
        f"{task_prompt(0)!r}; got {prompt!r:.80}."
    )
