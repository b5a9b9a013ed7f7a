"""Step quality for LLM agents that keep the dialogue.

At a shared reference state, a dialogue-keeping agent (``ChatHistory(record=
"raw")``, the stack GRPO training plays) must read the reference trajectory's
turns as the replies it would have written itself, in its own prompt format,
and be judged on its next move.  The check is exact: an ``HFAgent`` whose
model replies are scripted to be the oracle's moves reads, at every reference
state of an oracle trajectory, token for token the prompt it read when it
played those moves itself under ``evaluate``.  Two tokenizers: the tiny
model's and SmolLM2-135M-Instruct's real one (from the shipped GGUF file).
"""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from llm_fixtures import ChatServer, TinyBackend

import agent_envs  # noqa: F401
from agent_envs.evaluation import NoisyOracleAgent, evaluate, step_quality
from agent_envs.protocol import ReplyWriter
from baselines.llm.agents.hf_agent import HFAgent
from baselines.llm.agents.openai_agent import OpenAIChatAgent
from wrappers.info import chat_stack
from wrappers.protocol import ORACLE_ACTIONS, TASK_ID, TURN

pytestmark = pytest.mark.usefixtures("one_torch_thread")
ENV = "agent_envs/GuessNumber-20-v0"
TASKS = [0, 3, 7, 12]
MAX_TURNS = 8


def dialogue_stack():
    """The stack a GRPO-trained model is evaluated on: the whole replies are the dialogue."""
    return chat_stack(gym.make(ENV), MAX_TURNS, record="raw")


class ScriptedHFAgent(HFAgent):
    """An ``HFAgent`` whose model always replies with the oracle's move, in its reply format.

    Everything but the model's forward pass is HFAgent's own: prompts, token
    history, few-shot examples, parsing.  The reply's tokens are its text's
    plus the end token, as a model that wrote it would have sampled them.
    Every prompt it builds is kept under its episode's (task, turn).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.required_info = (*self.required_info, ORACLE_ACTIONS)
        self.read: dict[tuple[int, int], list[list[int]]] = {}
        self._moves: dict[tuple[int, ...], str] = {}

    def prompt_ids(self, observation, info, key=None):
        ids = super().prompt_ids(observation, info, key)
        self.read.setdefault((info[TASK_ID], info[TURN]), []).append(ids)
        self._moves[tuple(ids)] = info[ORACLE_ACTIONS][0]
        return ids

    def _generate(self, prompts, seeds, keys):
        replies = []
        for prompt in prompts:
            text = self.write_reply(self._moves[tuple(prompt)])
            tokens = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            replies.append(([*tokens, self._eos_ids[0]], text))
        return replies


@pytest.fixture(params=["tiny", "smollm2"])
def model_path(request):
    return request.getfixturevalue(
        {"tiny": "tiny_llama_path", "smollm2": "smollm2_path"}[request.param]
    )


@pytest.mark.parametrize(("reply_format", "few_shot"), [("think", 0), ("action", 1)])
def test_at_a_reference_state_the_agent_reads_the_prompt_it_read_playing_those_moves(
    model_path, reply_format, few_shot
):
    def agent():
        return ScriptedHFAgent(
            str(model_path), reply_format=reply_format, few_shot=few_shot, temperature=0
        )

    played, judged = agent(), agent()
    evaluate(played, dialogue_stack, ks=[1], budgets=[MAX_TURNS], tasks=TASKS, samples=1)
    result = step_quality(
        judged,
        dialogue_stack,
        tasks=TASKS,
        states_per_task=3,
        reference=NoisyOracleAgent(epsilon=0.0),  # the oracle's trajectory: the one it played
        max_turns=MAX_TURNS,
        batch_size=4,
    )
    assert result["optimal_rate"] == 1.0 and result["invalid_rate"] == 0.0
    assert result["states"] == sum(len(prompts) for prompts in judged.read.values())
    later = [(task, turn) for task, turn in judged.read if turn >= 2]
    assert later, "the states must include some deep in a dialogue"
    for state, prompts in judged.read.items():
        assert all(prompt == played.read[state][0] for prompt in prompts), state
    # Readable too: the reference's turns appear as replies in the agent's format.
    task, turn = later[0]
    text = judged.tokenizer.decode(judged.read[(task, turn)][0])
    written = judged.write_reply("10")  # GuessNumber-20's bisecting first guess
    assert f"assistant\n{written}<|im_end|>" in text


def test_every_llm_agent_writes_replies_in_its_own_format(tiny_llama_path):
    think = HFAgent(str(tiny_llama_path), reply_format="think", temperature=0)
    bare = HFAgent(str(tiny_llama_path), reply_format="action", temperature=0)
    remote = OpenAIChatAgent("http://127.0.0.1:9/v1", "tiny", reply_format="think")
    assert all(isinstance(agent, ReplyWriter) for agent in (think, bare, remote))
    assert (think.write_reply("7"), bare.write_reply("7"), remote.write_reply("7")) == (
        "Action: 7",
        "7",
        "Action: 7",
    )


def test_an_openai_agent_is_sent_the_reference_dialogue_in_its_format(tiny_path):
    server = ChatServer(TinyBackend(tiny_path))
    try:
        agent = OpenAIChatAgent(
            server.base_url, "tiny", reply_format="think", max_new_tokens=8, backoff=0.0
        )
        result = step_quality(
            agent, dialogue_stack, tasks=TASKS[:2], states_per_task=3, max_turns=MAX_TURNS
        )
    finally:
        server.close()
    assert len(server.requests) == result["states"] > 0
    said = [
        message["content"]
        for request in server.requests
        for message in request["body"]["messages"]
        if message["role"] == "assistant"
    ]
    assert said, "some states must come after reference moves"
    assert all(re.fullmatch(r"Action: \S+", content) for content in said), said
