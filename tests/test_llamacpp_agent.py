"""LlamaCppAgent on a tiny GGUF file written offline.

CI does not install llama-cpp-python (pip builds it from source; see
docs/real_llm.md), so the tests that run llama.cpp skip there with that
reason.  The rest run everywhere: the missing-engine error, and the prompt
path (the tokenizer read from the GGUF file and the one prompt builder),
which is the agent's own code and needs no llama.cpp.
"""

from __future__ import annotations

import json
import sys

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from gguf_fixtures import tiny_llama, write_tiny_gguf  # noqa: E402
from llm_fixtures import build_tiny_model  # noqa: E402

from agent_envs.cli import main  # noqa: E402
from agent_envs.evaluation import evaluate  # noqa: E402
from agent_envs.evaluation.episode_record import EpisodeRecord  # noqa: E402
from baselines.llm.agents.hf_agent import HFAgent  # noqa: E402
from baselines.llm.agents.llamacpp_agent import LlamaCppAgent, gguf_tokenizer  # noqa: E402
from baselines.llm.models.resolve import CACHE_ENV, ModelError  # noqa: E402
from baselines.llm.prompting.prompt_encoder import PromptEncoder  # noqa: E402
from baselines.llm.prompting.replies import reply_complete  # noqa: E402
from wrappers.info import ChatHistory, chat_stack  # noqa: E402
from wrappers.protocol import ENV_ID, TASK_ID  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


ENV = "agent_envs/GuessNumber-v0"


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory):
    folder = tmp_path_factory.getbasetemp()
    tokenizer = build_tiny_model(str(folder))
    return write_tiny_gguf(folder / "tiny-llamacpp.gguf", tokenizer, tiny_llama(tokenizer))


@pytest.fixture
def llama_cpp():
    return pytest.importorskip(
        "llama_cpp", reason="llama-cpp-python is not installed (the [smollm2] extra builds it)"
    )


def dialogue(task_id, steps):
    env = ChatHistory(gym.make(ENV))
    observation, info = env.reset(seed=0, options={TASK_ID: task_id})
    for action in steps:
        observation, _, _, _, info = env.step(action)
    return observation, {**info, ENV_ID: ENV, "episode_seed": 11}


# ------------------------------------------------------- without llama.cpp
def test_without_llama_cpp_the_agent_says_how_to_install_it(tiny_gguf, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp now fails
    with pytest.raises(ImportError, match=r"\[smollm2\]"):
        LlamaCppAgent(tiny_gguf)
    argv = ["eval", ENV, "--agent", "llamacpp", "--agent-kwargs", f'{{"model": "{tiny_gguf}"}}']
    assert main([*argv, "--k", "1", "--t", "2", "--tasks", "1", "--samples", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "llama-cpp-python" in err


def test_a_missing_model_fails_before_llama_cpp_is_needed(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(ModelError, match="never downloaded"):
        LlamaCppAgent(tmp_path / "nope.gguf")
    with pytest.raises(ModelError, match=r"not a \.gguf file"):
        LlamaCppAgent(tmp_path)


def test_its_prompts_are_the_hf_agents_token_for_token(tiny_gguf, tmp_path, monkeypatch):
    """The tokenizer from the GGUF metadata and the shared prompt builder: HFAgent's ids."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    hf = HFAgent(tiny_gguf, few_shot=1, system_prompt="Play.", max_new_tokens=8, device="cpu")
    tokenizer = gguf_tokenizer(tiny_gguf)
    observation, info = dialogue(2, ["50", "25"])
    encoder = PromptEncoder(tokenizer, "Play.", hf.max_context, 8, hf.style.examples(info))
    assert encoder.prompt_ids(observation, info) == hf.prompt_ids(observation, info)
    assert tokenizer.padding_side == "left"


# ---------------------------------------------------------- with llama.cpp
def test_greedy_replies_are_deterministic_and_stop_at_the_first_line(tiny_gguf, llama_cpp):
    agent = LlamaCppAgent(tiny_gguf, few_shot=1, temperature=0, max_new_tokens=12)
    observation, info = dialogue(1, ["50"])
    first = agent.act(observation, info)
    assert agent.act(observation, info).raw == first.raw
    # The action format: decoding ended with the line break after the first
    # non-blank line, so no earlier part of the reply was complete already.
    assert not reply_complete(first.raw.rsplit("\n", 1)[0], "action")


def test_one_thread_count_reads_prompts_and_decodes(tiny_gguf, llama_cpp):
    # llama-cpp-python reads prompts with every core unless told otherwise.
    assert LlamaCppAgent(tiny_gguf).llm.context_params.n_threads_batch == 1
    agent = LlamaCppAgent(tiny_gguf, threads=2)
    assert agent.llm.context_params.n_threads == agent.llm.context_params.n_threads_batch == 2


def test_sampling_is_seeded_per_episode_and_turn(tiny_gguf, llama_cpp):
    agent = LlamaCppAgent(tiny_gguf, temperature=1.0, max_new_tokens=8, seed=3)
    replies = [agent.act("Guess.", {"episode_seed": s, "turn": 0}).raw for s in (1, 2, 1)]
    assert replies[0] == replies[2] and replies[0] != replies[1]


def test_each_episode_keeps_its_cache_between_turns(tiny_gguf, llama_cpp):
    """Two episodes take turns; each one's second turn reads only what its first did not hold."""
    agent = LlamaCppAgent(tiny_gguf, few_shot=1, temperature=0, max_new_tokens=6)

    def turn(steps):
        pairs = [dialogue(task, steps) for task in (1, 2)]
        infos = [
            {**info, "episode_seed": seed} for (_, info), seed in zip(pairs, (5, 6), strict=True)
        ]
        observations = [observation for observation, _ in pairs]
        prompts = [agent.prompt_ids(o, i) for o, i in zip(observations, infos, strict=True)]
        before = agent.tokens_read
        agent.act_batch(observations, infos)
        return prompts, agent.tokens_read - before

    first, _ = turn([])
    for prompt, seed in zip(first, (5, 6), strict=True):
        # What is kept is what the cache holds: the prompt and the reply
        # (but its last token), never the rest of llama.cpp's token buffer.
        kept, _ = agent._states._states[seed]
        assert kept[: len(prompt)] == tuple(prompt)
        assert len(kept) < len(prompt) + agent.max_new_tokens
    second, read = turn(["50"])
    for old, new in zip(first, second, strict=True):
        assert new[: len(old)] == old  # each prompt continues the episode's previous one
    assert read <= sum(len(new) - len(old) for old, new in zip(first, second, strict=True))
    observation, info = dialogue(3, [])
    agent.act_batch([observation], [{**info, "episode_seed": 7}])  # the others have ended
    assert list(agent._states._states) == [7]


def test_episodes_do_not_depend_on_batching(tiny_gguf, llama_cpp, tmp_path):
    agent = LlamaCppAgent(tiny_gguf, few_shot=1, temperature=1.0, max_new_tokens=6)
    logs = []
    for batch_size in (1, 4):
        path = tmp_path / f"run{batch_size}.jsonl"
        generated = agent.generated_tokens
        result = evaluate(
            agent,
            lambda: chat_stack(gym.make(ENV), 3),
            ks=[1],
            budgets=[3],
            tasks=2,
            samples=2,
            batch_size=batch_size,
            log_path=path,
            transcripts=True,
            n_bootstrap=10,
        )
        assert result.errors == 0 and result.diagnostics["unparsable_rate"] is not None
        lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        for line in lines:
            line.pop("run", None)  # the run's fingerprint
            for timing in EpisodeRecord.TIMINGS:
                assert line.pop(timing) >= 0  # measured, so different in each run
        # The episodes' reply tokens add up to what the agent decoded in this run.
        assert sum(line["tokens_generated"] for line in lines) == agent.generated_tokens - generated
        assert all(line["tokens_read"] > 0 for line in lines)
        logs.append(sorted(lines, key=lambda line: (line["task"], line["sample"])))
    assert logs[0] == logs[1]
