"""What the real-model GRPO scripts share: SmolLM2, its few-shot prompt, and the rollout.

``benchmarks/real_llm_grpo_speed.py``, :mod:`studies.real_llm.pick` and the
real-model study import this module.

The prompt is the product's few-shot prompt (:mod:`baselines.llm.prompting.few_shot`):
the ``"action"`` reply format's system prompt, then ``FEW_SHOT`` episodes
played by the env's oracle on the reserved example task ids (never trained
or evaluated on), as earlier turns of the same chat; a reply ends at the end
of its first line.  The GRPO rollout and ``HFAgent`` build it alike, so
evaluation reads the tokens training read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import agent_envs  # noqa: F401  (registers the env ids)

#: The env and variant of the run (chosen by measuring; see docs/real_llm.md).
ENV = "agent_envs/GuessNumber-20-v0"
FEW_SHOT = 3
MAX_NEW_TOKENS = 10
TEMPERATURE = 0.7
LORA_TARGETS = ("q_proj", "v_proj")


def model_folder(model: str) -> str:
    """Return a local model folder for ``model`` (a folder, a GGUF file or a short name)."""
    try:
        from baselines.llm.models.resolve import resolve_model  # the model loader, where installed
    except ImportError:
        return model
    return os.fspath(resolve_model(model))


def load(model: str) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)`` in float32 on CPU, padding on the left."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = model_folder(model)
    tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return AutoModelForCausalLM.from_pretrained(folder), tokenizer


def rollout(
    env_id: str,
    budget: int,
    seed: int = 0,
    few_shot: int = FEW_SHOT,
    temperature: float = TEMPERATURE,
    max_new_tokens: int = MAX_NEW_TOKENS,
) -> Any:
    """Return the GRPO rollout: few-shot examples, bare actions, fixed budget."""
    from agent_envs.env_stack import BudgetRegime
    from baselines.llm.training.rollout import EpisodeRollout
    from baselines.llm.training.train_config import PolicySettings, RolloutSettings

    policy = PolicySettings(
        few_shot=few_shot, temperature=temperature, max_new_tokens=max_new_tokens
    )
    return EpisodeRollout(RolloutSettings(env_id, BudgetRegime.fixed(budget), policy, seed))


def agent(model: Any, env_id: str, few_shot: int = FEW_SHOT, **kwargs: Any) -> Any:
    """Return an HFAgent that builds its prompts as :func:`rollout` does."""
    from baselines.llm.agents.hf_agent import HFAgent

    settings = {
        "max_new_tokens": MAX_NEW_TOKENS,
        "temperature": TEMPERATURE,
        "prefix_cache": True,
        "device": "cpu",
        **kwargs,
    }
    return HFAgent(model, few_shot=few_shot, env_id=env_id, **settings)


def load_average() -> str:
    """Return ``/proc/loadavg``'s first three fields (speed figures depend on them)."""
    path = Path("/proc/loadavg")
    return " ".join(path.read_text().split()[:3]) if path.exists() else "unknown"
