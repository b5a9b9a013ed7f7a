"""Wrap an agent from an existing agent framework and measure its Pass@(K,T).

Agent frameworks (LangChain, smolagents, AutoGen, your lab's own) each have
their own call: ``agent.invoke(messages)``, ``agent.run(task)``,
``agent.step(observation)``...  The evaluator only needs ``act(observation,
info) -> str``.  The adapter below is the whole bridge: it hands the framework
the chat history that ``wrappers.ChatHistory`` keeps, parses the action out of
the reply with the same parser the LLM baselines use, and keeps the reply as
``AgentAction.raw`` so the run log's transcript shows what the agent said.

``FrameworkAgent`` stands in for the framework's agent so that this script
runs offline in a second: a scripted "model" that bisects in GuessNumber.
Replace it with your own agent object.

Run:  python examples/wrap_existing_agent.py [--tasks 20]
"""

from __future__ import annotations

import argparse
import re

import gymnasium as gym

import agent_envs
from agent_envs.evaluation import evaluate
from agent_envs.protocol import AgentAction
from baselines.llm.prompting.replies import parse_action
from wrappers.info import ChatHistory
from wrappers.protocol import MESSAGES

gym.register_envs(agent_envs)


class FrameworkAgent:
    """A stand-in for a framework's chat agent: messages in, an assistant message out."""

    def invoke(self, messages: list[dict[str, str]]) -> dict[str, str]:
        low, high = map(int, re.findall(r"between (\d+) and (\d+)", messages[-1]["content"])[-1])
        return {
            "role": "assistant",
            "content": f"Halve [{low}, {high}].\nAction: {(low + high) // 2}",
        }


class FrameworkAdapter:
    """The few lines that make any framework agent an agent_envs policy."""

    def __init__(self, agent: FrameworkAgent) -> None:
        self.agent = agent

    def act(self, observation: str, info: dict) -> AgentAction:
        reply = self.agent.invoke(info[MESSAGES])["content"]
        return AgentAction(parse_action(reply), raw=reply)


def main(argv: list[str] | None = None) -> dict:
    """Evaluate the wrapped agent on GuessNumber, print the table and return the result dict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    args = parser.parse_args(argv)
    result = evaluate(
        FrameworkAdapter(FrameworkAgent()),
        lambda: ChatHistory(gym.make("agent_envs/GuessNumber-v0"), window=4),
        ks=[1],
        budgets=[3, 5, 7],
        tasks=args.tasks,
        n_bootstrap=200,
    )
    print(result.table())
    return result.to_dict()


if __name__ == "__main__":
    main()
