"""What step quality costs for an LLM agent that keeps the dialogue: tokens and calls per state.

Step quality judges a policy on shared reference states; an ``HFAgent`` on the
stack GRPO training plays (``chat_stack(record="raw")``) reads, at each state,
the reference's dialogue up to it in its own format and writes one reply.
This prints, per state: the prompt tokens (what one prefill reads, before
the prefix cache spares shared prefixes), the generated tokens, the
``act_batch`` calls of the whole run, and CPU seconds (process time; wall time
on a shared machine is contended).

Settings as the SmolLM2 GRPO run's evaluation (``docs/real_llm.md``):
GuessNumber-20, 3 few-shot examples, bare-action replies, at most 10 new
tokens, temperature 0.7, the held-out ids from 10000.

    python benchmarks/llm_step_quality_cost.py                 # the tiny model
    python benchmarks/llm_step_quality_cost.py smollm2-135m    # the real one
"""

from __future__ import annotations

import math
import sys
import tempfile
import time

import gymnasium as gym

import agent_envs  # noqa: F401  (registers the env ids)
from agent_envs.evaluation import step_quality
from baselines.llm.agents.hf_agent import HFAgent
from wrappers.info import chat_stack

ENV = "agent_envs/GuessNumber-20-v0"
TASKS = list(range(10000, 10010))
STATES_PER_TASK, MAX_TURNS, BATCH = 10, 12, 64


class CountingAgent(HFAgent):
    """An ``HFAgent`` that counts the prompt tokens and the calls it gets."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.prompt_lengths: list[int] = []
        self.calls = 0

    def act_batch(self, observations, infos):
        self.calls += 1
        return super().act_batch(observations, infos)

    def prompt_ids(self, observation, info, key=None):
        ids = super().prompt_ids(observation, info, key)
        self.prompt_lengths.append(len(ids))
        return ids


def main(model: str | None) -> None:
    import torch

    torch.set_num_threads(1)
    if model is None:
        from baselines.llm.models.tiny import build_tiny_model

        model = str(build_tiny_model(tempfile.mkdtemp() + "/tiny", ENV))
    agent = CountingAgent(
        model, few_shot=3, max_new_tokens=10, temperature=0.7, batch_size=BATCH, device="cpu"
    )
    start = time.process_time()
    result = step_quality(
        agent,
        lambda: chat_stack(gym.make(ENV), MAX_TURNS, record="raw"),
        tasks=TASKS,
        states_per_task=STATES_PER_TASK,
        max_turns=MAX_TURNS,
        batch_size=BATCH,
    )
    seconds = time.process_time() - start
    states = len(agent.prompt_lengths)
    print(f"model {model}: {states} states judged ({result['states']} after exclusions)")
    print(f"act_batch calls {agent.calls} (ceil(states / {BATCH}) = {math.ceil(states / BATCH)})")
    print(
        f"prompt tokens per state: mean {sum(agent.prompt_lengths) / states:.0f}, "
        f"max {max(agent.prompt_lengths)}, min {min(agent.prompt_lengths)}"
    )
    print(f"generated tokens per state: {agent.generated_tokens / states:.2f} (at most 10)")
    print(f"CPU seconds: {seconds:.1f} in all, {seconds / states:.3f} per state (1 thread)")
    print(f"optimal rate {result['optimal_rate']:.3f}, invalid rate {result['invalid_rate']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
