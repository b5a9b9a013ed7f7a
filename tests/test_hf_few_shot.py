"""HFAgent with few-shot examples, reply formats and stopping, on the tiny model built offline."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


from agent_envs.evaluation import evaluate  # noqa: E402
from agent_envs.evaluation.episode_record import EpisodeRecord  # noqa: E402
from agent_envs.instances import instance_key  # noqa: E402
from baselines.llm.agents.generation import generate_replies  # noqa: E402
from baselines.llm.agents.hf_agent import HFAgent  # noqa: E402
from baselines.llm.agents.prefix_cache import PrefixCacheDecoder  # noqa: E402
from baselines.llm.prompting.few_shot import FIRST_EXAMPLE_ID, example_messages, oracle_episodes  # noqa: E402
from baselines.llm.prompting.replies import ACTION_REPLY_TOKENS, ReplyStop, cut_reply  # noqa: E402
from wrappers.info import ChatHistory  # noqa: E402
from wrappers.protocol import ENV_ID, TASK_ID  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


ENV = "agent_envs/GuessNumber-v0"


def agent_for(loaded, **kwargs):
    model, tokenizer = loaded
    kwargs.setdefault("max_new_tokens", 8)
    return HFAgent(model, tokenizer=tokenizer, **kwargs)


def history_info(env_id, task_id, steps):
    env = ChatHistory(gym.make(env_id))
    observation, info = env.reset(seed=0, options={TASK_ID: task_id})
    for action in steps:
        observation, _, _, _, info = env.step(action)
    return observation, {**info, ENV_ID: env_id, "episode_seed": 7}


# ---------------------------------------------------------------- prompts
@pytest.mark.parametrize("reply_format", ["action", "think"])
def test_the_prompt_holds_the_examples_in_the_agents_format(loaded, reply_format):
    # A short system prompt, so that the whole dialogue fits the tiny context.
    agent = agent_for(loaded, few_shot=1, reply_format=reply_format, system_prompt="Play.")
    observation, info = history_info(ENV, 3, ["50", "25"])
    text = agent.tokenizer.decode(agent.prompt_ids(observation, info))
    examples = example_messages(ENV, 1, reply_format)
    expected = [
        {"role": "system", "content": agent.system_prompt},
        *examples,
        *info["messages"],
    ]
    rendered = agent.tokenizer.apply_chat_template(
        expected, tokenize=False, add_generation_prompt=True
    )
    assert text == rendered
    # The examples' replies look like the agent's own past replies in the
    # history (bare actions) exactly when the format is the bare action.
    example_replies = [m["content"] for m in examples if m["role"] == "assistant"]
    bare = all(not reply.startswith("Action:") for reply in example_replies)
    assert bare is (reply_format == "action")


def test_without_few_shot_the_prompt_is_unchanged(loaded):
    observation, info = history_info(ENV, 3, ["50"])
    plain = agent_for(loaded).prompt_ids(observation, info)
    assert agent_for(loaded, few_shot=0).prompt_ids(observation, info) == plain
    assert len(agent_for(loaded, few_shot=1).prompt_ids(observation, info)) > len(plain)


def test_an_example_task_is_refused(loaded):
    agent = agent_for(loaded, few_shot=1, env_id=ENV)
    with pytest.raises(ValueError, match="reserved for few-shot"):
        agent.act("obs", {TASK_ID: FIRST_EXAMPLE_ID})


def test_the_evaluator_refuses_a_task_of_an_examples_instance_before_playing(loaded):
    agent = agent_for(loaded, few_shot=1)
    ((example, _),) = oracle_episodes(ENV, 1)
    same = next(t for t in range(5000) if instance_key(ENV, t) == instance_key(ENV, example))
    with pytest.raises(ValueError, match=f"task {same} of {ENV} is the same instance"):
        evaluate(agent, ENV, ks=[1], budgets=[2], tasks=[0, same])


def test_the_evaluator_hands_the_env_id_to_a_few_shot_agent(loaded):
    agent = agent_for(loaded, few_shot=1, temperature=0, max_new_tokens=4)
    assert agent.required_info == (ENV_ID,)
    seen = []
    original = agent.prompt_ids

    def spy(observation, info, key=None):
        seen.append(info[ENV_ID])
        return original(observation, info, key)

    agent.prompt_ids = spy
    result = evaluate(agent, ENV, ks=[1], budgets=[2], tasks=1, n_bootstrap=10)
    assert result.errors == 0 and seen == [ENV, ENV]


# ---------------------------------------------------------------- stopping
class StopAfter:
    """Stop every reply after ``count`` tokens (a deterministic stand-in for a newline)."""

    def __init__(self, count):
        self.count = count

    def __call__(self, tokens):
        return len(tokens) >= self.count


def two_rows(loaded):
    """Two prompts, their greedy 8-token replies and a stop: row 0 after 2 tokens, row 1 after 5."""
    model, tokenizer = loaded
    prompts = [tokenizer("I am thinking of a number")["input_ids"], tokenizer("Hi")["input_ids"]]
    eos = [tokenizer.eos_token_id]
    full = generate_replies(model, prompts, tokenizer.pad_token_id, eos, 8)

    def stop(tokens):
        return len(tokens) >= (2 if tokens == full[0][: len(tokens)] else 5)

    return model, tokenizer, prompts, eos, full, stop


def test_each_row_stops_on_its_own_in_both_decoders(loaded):
    model, tokenizer, prompts, eos, full, stop = two_rows(loaded)
    stopped = generate_replies(model, prompts, tokenizer.pad_token_id, eos, 8, stop=stop)
    decoder = PrefixCacheDecoder(model, eos, 8)
    cached = decoder(["a", "b"], prompts, lambda s, rows: s.argmax(-1), stop=stop)
    assert cached == [full[0][:2], full[1][:5]]
    assert [row[:2] for row in stopped[:1]] == [full[0][:2]]
    assert stopped[1][:5] == full[1][:5]


def test_a_finished_row_leaves_the_batch_and_is_not_decoded_again(loaded):
    model, _, prompts, eos, full, stop = two_rows(loaded)
    decoder = PrefixCacheDecoder(model, eos, 8)
    widths = []  # rows are packed into one sequence: the tokens of a forward pass
    hook = model.register_forward_pre_hook(
        lambda _, args, kwargs: widths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        replies = decoder(["a", "b"], prompts, lambda s, live: s.argmax(-1), stop=stop)
    finally:
        hook.remove()
    assert replies == [full[0][:2], full[1][:5]]
    # Both prompts whole, then a token per live row: row 0 ended at its 2nd token
    # and was never run again.
    assert widths == [sum(map(len, prompts)), 2, 1, 1, 1]
    assert decoder.row_steps == 2 + 5  # decoded row-steps equal the needed ones
    # Both rows kept their caches: the next turn feeds one reply token and one new token.
    longer = [p + r + [5] for p, r in zip(prompts, replies, strict=True)]
    assert [len(entry.tokens) for entry in decoder._caches.values()] == [len(p) - 2 for p in longer]


def test_the_agent_sets_torchs_thread_count_to_one_by_default(loaded):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        agent_for(loaded)
        assert torch.get_num_threads() == 1
        torch.set_num_threads(2)
        agent_for(loaded, threads=None)  # leaves torch's own setting
        assert torch.get_num_threads() == 2
        with pytest.raises(ValueError, match="threads"):
            agent_for(loaded, threads=0)
    finally:
        torch.set_num_threads(before)


def test_reply_stop_ends_at_the_newline_of_the_action_line(loaded):
    tokenizer = loaded[1]
    stop = ReplyStop(tokenizer, "action")
    tokens = tokenizer("50\nbecause it halves", add_special_tokens=False)["input_ids"]
    flags = [stop(tokens[: end + 1]) for end in range(len(tokens))]
    first = flags.index(True)
    assert tokenizer.decode(tokens[: first + 1]).rstrip("\n") == "50"
    assert cut_reply(tokens, [tokenizer.eos_token_id], stop) == tokens[: first + 1]
    think = ReplyStop(tokenizer, "think")
    words = tokenizer("I go.\nAction: 50\nmore", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(cut_reply(words, [], think)).endswith("Action: 50\n")


def test_a_bare_action_reply_stops_at_its_token_cap(loaded):
    tokenizer = loaded[1]
    ramble = tokenizer(" fifty" * 40, add_special_tokens=False)["input_ids"]
    assert len(ramble) > ACTION_REPLY_TOKENS
    assert cut_reply(ramble, [], ReplyStop(tokenizer, "action")) == ramble[:ACTION_REPLY_TOKENS]
    assert cut_reply(ramble, [], ReplyStop(tokenizer, "think")) == ramble  # free text: no cap
    assert cut_reply(ramble, [], ReplyStop(tokenizer, "action", max_tokens=5)) == ramble[:5]


def test_the_agent_cuts_replies_where_they_stop(loaded):
    observation, info = history_info(ENV, 1, [])
    long = agent_for(loaded, temperature=0, max_new_tokens=8)
    long.stop = StopAfter(99)
    short = agent_for(loaded, temperature=0, max_new_tokens=8)
    short.stop = StopAfter(3)
    full = long.tokenizer(long.act(observation, info).raw, add_special_tokens=False)
    cut = short.act(observation, info).raw
    assert long.tokenizer.decode(full["input_ids"][:3]) == cut
    assert len(full["input_ids"]) > 3


# ------------------------------------------------ batched vs one at a time
def test_few_shot_episodes_do_not_depend_on_batching(loaded, tmp_path):
    logs = []
    for batch_size, agent_batch, cache in ((1, 1, False), (6, 4, True)):
        path = tmp_path / f"run{batch_size}.jsonl"
        result = evaluate(
            agent_for(loaded, few_shot=1, batch_size=agent_batch, prefix_cache=cache),
            lambda: ChatHistory(gym.make(ENV)),
            ks=[1, 2],
            budgets=[3],
            tasks=3,
            samples=2,
            batch_size=batch_size,
            log_path=path,
            transcripts=True,
            n_bootstrap=20,
        )
        assert result.errors == 0 and result.episodes == 6
        lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        for line in lines:
            line.pop("run", None)  # the run's fingerprint names the agent's batch size
            for timing in EpisodeRecord.TIMINGS:  # measured, so different in each run
                line.pop(timing)
        logs.append(sorted(lines, key=lambda line: (line["task"], line["sample"])))
    assert logs[0] == logs[1]
    steps = [step for line in logs[0] for step in line["transcript"]["steps"]]
    raws = {step.get("raw", step["action"]) for step in steps}
    assert len(raws) > 1  # sampled replies differ between attempts


@pytest.mark.parametrize("prefix_cache", [True, False])
def test_episodes_are_the_same_at_agent_batch_1_and_64(loaded, tmp_path, prefix_cache):
    logs = []
    for batch in (1, 64):
        path = tmp_path / f"run{batch}.jsonl"
        agent = agent_for(loaded, few_shot=1, batch_size=batch, prefix_cache=prefix_cache)
        result = evaluate(
            agent,
            lambda: ChatHistory(gym.make(ENV)),
            ks=[1],
            budgets=[3],
            tasks=16,
            samples=4,
            batch_size=64,
            log_path=path,
            transcripts=True,
            n_bootstrap=20,
        )
        assert result.errors == 0 and result.episodes == 64
        if prefix_cache:
            assert agent.decoded_row_steps == agent.generated_tokens
        lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        for line in lines:
            line.pop("run", None)  # the run's fingerprint names the agent's batch size
            for timing in EpisodeRecord.TIMINGS:  # measured, so different in each run
                line.pop(timing)
        logs.append(sorted(lines, key=lambda line: (line["task"], line["sample"])))
    assert logs[0] == logs[1]


def test_a_new_episode_reuses_the_prefix_other_episodes_computed(loaded):
    """The examples every episode shares are computed once, and replies do not change."""
    model, tokenizer = loaded
    shared = tokenizer("System prompt and a worked example: 50, lower, 25.")["input_ids"]
    first = shared + tokenizer(" Task one.")["input_ids"]
    second = shared + tokenizer(" Another task.")["input_ids"]
    eos = [tokenizer.eos_token_id]
    decoder = PrefixCacheDecoder(model, eos, 6)
    widths = []
    original = model.forward

    def spy(*args, **kwargs):
        widths.append(kwargs["input_ids"].shape[1])
        return original(*args, **kwargs)

    greedy = lambda s, rows: s.argmax(-1)  # noqa: E731
    decoder(["a"], [first], greedy)
    model.forward = spy
    try:
        reply = decoder(["b"], [second], greedy)
    finally:
        del model.forward
    common = next(i for i, (x, y) in enumerate(zip(first, second, strict=False)) if x != y)
    assert common >= len(shared)
    assert widths[0] == len(second) - common  # only the tokens after the shared start ran
    plain = generate_replies(model, [second], tokenizer.pad_token_id, eos, 6)[0]
    assert reply[0] == plain[: len(reply[0])]


def test_new_rows_of_one_call_compute_their_shared_opening_once(loaded):
    model, tokenizer = loaded
    shared = tokenizer("System prompt and a worked example: 50, lower, 25, higher.")["input_ids"]
    prompts = [shared + tokenizer(f" Task {name}.")["input_ids"] for name in ("one", "two")]
    eos = [tokenizer.eos_token_id]
    decoder = PrefixCacheDecoder(model, eos, 5)
    widths = []
    original = model.forward

    def spy(*args, **kwargs):
        widths.append(kwargs["input_ids"].shape[1])
        return original(*args, **kwargs)

    model.forward = spy
    try:
        replies = decoder(["a", "b"], prompts, lambda s, rows: s.argmax(-1))
    finally:
        del model.forward
    common = next(i for i, (x, y) in enumerate(zip(*prompts, strict=False)) if x != y)
    # One pass over the opening, then each row's own tokens, packed without padding.
    assert widths[:2] == [common, sum(len(p) - common for p in prompts)]
    plain = generate_replies(model, prompts, tokenizer.pad_token_id, eos, 5)
    assert [reply == row[: len(reply)] for reply, row in zip(replies, plain, strict=True)] == [
        True,
        True,
    ]
