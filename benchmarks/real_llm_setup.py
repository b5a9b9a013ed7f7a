"""What the real-model GRPO scripts share: SmolLM2, its few-shot prompt, and the rollout.

``real_llm_grpo_speed.py`` and ``real_llm_grpo_run.py`` import this module
(run them as ``python benchmarks/<script>.py``, which puts this folder on the
path).

The prompt: a short system prompt asking for the bare action, then
``FEW_SHOT`` example episodes played by the env's oracle on task ids from
``EXAMPLE_FIRST_TASK`` on (never trained or evaluated on), rendered as
earlier turns of the same chat, each ending on the oracle's winning move.
They are added where the chat template renders the dialogue
(:meth:`PromptEncoder.render <baselines.llm.prompting.PromptEncoder.render>`),
so the first prompt, every delta and HFAgent's prompts all carry them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gymnasium as gym

import agent_envs  # noqa: F401  (registers the env ids)
from agent_envs.protocol import TASK_ID

#: The env and variant of the run (chosen by measuring; see docs/real_llm.md).
ENV = "agent_envs/GuessNumber-v0"
SYSTEM_PROMPT = "You play a game. Reply with the action only, nothing else."
FEW_SHOT = 3
#: Example episodes come from task ids far above training (0..) and evaluation (10000..).
EXAMPLE_FIRST_TASK = 90_000
MAX_NEW_TOKENS = 10
TEMPERATURE = 0.7
LORA_TARGETS = ("q_proj", "v_proj")


def model_folder(model: str) -> str:
    """Return a local model folder for ``model`` (a folder, a GGUF file or a short name)."""
    try:
        from baselines.llm.models import resolve_model  # the model loader, where installed
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


def oracle_examples(env_id: str, count: int) -> list[dict[str, str]]:
    """Return ``count`` oracle episodes as chat messages, each ending on the last move."""
    env = gym.make(env_id).unwrapped
    messages: list[dict[str, str]] = []
    for index in range(count):
        task = EXAMPLE_FIRST_TASK + index
        observation, _ = env.reset(seed=task, options={TASK_ID: task})
        while True:
            messages.append({"role": "user", "content": observation})
            action = env.oracle_actions()[0]
            messages.append({"role": "assistant", "content": action})
            observation, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    return messages


def add_examples(encoder: Any, examples: list[dict[str, str]]) -> Any:
    """Make ``encoder`` (a PromptEncoder) render ``examples`` after the system prompt."""
    render = encoder.render

    def with_examples(messages: list) -> str:
        head = 1 if messages and messages[0]["role"] == "system" else 0
        return render([*messages[:head], *examples, *messages[head:]])

    encoder.render = with_examples
    return encoder


def rollout(
    env_id: str,
    budget: int,
    seed: int = 0,
    few_shot: int = FEW_SHOT,
    temperature: float = TEMPERATURE,
    max_new_tokens: int = MAX_NEW_TOKENS,
) -> Any:
    """Return the GRPO rollout: bare actions, few-shot examples, fixed budget."""
    from baselines.llm.budget_spec import BudgetSpec
    from baselines.llm.rollout import EpisodeRollout

    examples = oracle_examples(env_id, few_shot)

    class FewShotRollout(EpisodeRollout):
        def chat_tokens(self, model: Any, tokenizer: Any) -> Any:
            chat = super().chat_tokens(model, tokenizer)
            add_examples(chat.encoder, examples)
            return chat

    return FewShotRollout(
        env_id,
        BudgetSpec.fixed(budget),
        seed=seed,
        system_prompt=SYSTEM_PROMPT,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
    )


def agent(model: Any, env_id: str, few_shot: int = FEW_SHOT, **kwargs: Any) -> Any:
    """Return an HFAgent that builds its prompts as :func:`rollout` does."""
    from baselines.llm.hf_agent import HFAgent

    settings = {
        "system_prompt": SYSTEM_PROMPT,
        "max_new_tokens": MAX_NEW_TOKENS,
        "temperature": TEMPERATURE,
        "prefix_cache": True,
        "device": "cpu",
        **kwargs,
    }
    hf = HFAgent(model, **settings)
    add_examples(hf.prompts, oracle_examples(env_id, few_shot))
    return hf


def load_average() -> str:
    """Return ``/proc/loadavg``'s first three fields (speed figures depend on them)."""
    path = Path("/proc/loadavg")
    return " ".join(path.read_text().split()[:3]) if path.exists() else "unknown"
