"""Teach a model to call the env's tool before GRPO through TRL's ``environment_factory``.

An untrained (or tiny) model never writes a tool call, so a GRPO step through
:func:`agent_envs.integrations.trl.environment_factory` sees tool calls 0,
reward 0 and loss 0.  The CPU recipe (``docs/integrations.md``) is:

1. give the tokenizer a chat template that TRL parses tool calls from
   (:func:`tool_chat_template`: TRL's own Qwen3 template);
2. :func:`warm_start_tool_calls`: a few supervised steps on the env's oracle
   played through the very tool GRPO will offer (:func:`oracle_tool_examples`:
   each turn's chat, rendered with the tool's schema, and the oracle's action
   as the tool call the template writes);
3. one or more GRPO steps with ``environment_factory``.

Needs the ``[rl]`` extra (torch, transformers, TRL).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_envs.env_stack import BudgetRegime
from agent_envs.integrations.trl import PROMPT, environment_factory
from agent_envs.registration import make_env
from wrappers.protocol import TASK_ID

__all__ = ["oracle_tool_examples", "tool_chat_template", "warm_start_tool_calls"]


def tool_chat_template() -> str:
    """Return TRL's Qwen3 chat template, which TRL recognises as tool-capable and parses.

    Give it to a tokenizer whose own template has no tool calls
    (``tokenizer.chat_template = tool_chat_template()``).
    """
    from trl.chat_template_utils import qwen3_chat_template

    return qwen3_chat_template


def _render(tokenizer: Any, messages: list[dict], tool: Any, prompt: bool) -> str:
    return tokenizer.apply_chat_template(
        messages, tools=[tool], tokenize=False, add_generation_prompt=prompt
    )


def oracle_tool_examples(
    tokenizer: Any,
    env_id: str,
    tasks: Iterable[int],
    regime: BudgetRegime | int,
) -> list[tuple[str, str]]:
    """Return ``(context, reply)`` texts: every turn of the oracle played through the tool.

    ``context`` is the chat so far (the row's prompt, the env's first
    observation, the earlier calls and the tool's answers), rendered by the
    tokenizer's template with the tool's schema and a generation prompt;
    ``reply`` is what the template writes for an assistant turn that calls
    ``act`` with the oracle's action.  ``regime`` is ``environment_factory``'s
    (an int T or a :class:`~agent_envs.env_stack.BudgetRegime`), so the answers show
    the turns left exactly as in GRPO.

    Raises:
        ValueError: if the template renders a turn differently once the chat
            goes on (the reply would not be what GRPO samples after the context).
    """
    make = environment_factory(env_id, regime)
    examples = []
    for task_id in tasks:
        episode = make()
        messages = [{"role": "user", "content": PROMPT + episode.reset(task_id=task_id)}]
        # The oracle reads a shadow of the episode's env: same seed, task and actions.
        shadow = make_env(env_id).unwrapped
        shadow.reset(seed=episode.seed, options={TASK_ID: task_id})
        over = False
        while not over and episode.turns < episode.budget and shadow.oracle_actions():
            action = shadow.oracle_actions()[0]
            arguments = {"action": action}
            call = {"type": "function", "function": {"name": "act", "arguments": arguments}}
            context = _render(tokenizer, messages, episode.act, True)
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            whole = _render(tokenizer, messages, episode.act, False)
            if not whole.startswith(context):
                raise ValueError("The chat template renders earlier turns differently later on.")
            examples.append((context, whole[len(context) :].rstrip("\n")))
            messages.append({"role": "tool", "name": "act", "content": episode.act(action)})
            over = shadow.step(action)[2]
    return examples


def warm_start_tool_calls(
    model: Any,
    tokenizer: Any,
    env_id: str,
    tasks: Iterable[int],
    *,
    steps: int = 60,
    learning_rate: float = 1e-2,
    seed: int = 0,
    regime: BudgetRegime | int,
) -> list[float]:
    """Train ``model`` for ``steps`` steps on :func:`oracle_tool_examples`; return the losses.

    One example per step, in a seeded order; the loss is on the reply's tokens
    only.  The model stays in training mode on its own device.

    Raises:
        ValueError: the oracle plays no turn of ``tasks``, or as
            :func:`oracle_tool_examples`.
    """
    import torch

    examples = oracle_tool_examples(tokenizer, env_id, tasks, regime)
    if not examples:
        raise ValueError("No oracle turns to learn from: give tasks the oracle can play.")
    encoded = []
    for context, reply in examples:
        prompt = tokenizer(context, add_special_tokens=False)["input_ids"]
        target = tokenizer(reply, add_special_tokens=False)["input_ids"]
        encoded.append((prompt, target))
    generator = torch.Generator().manual_seed(seed)
    order = torch.randint(len(encoded), (steps,), generator=generator).tolist()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    device = next(model.parameters()).device
    model.train()
    losses = []
    for index in order:
        prompt, target = encoded[index]
        ids = torch.tensor([prompt + target], device=device)
        labels = ids.clone()
        labels[0, : len(prompt)] = -100  # learn the call, not the chat
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses
