"""HFAgent on a tiny GPT-2 built offline: loading, prompts, trimming, seeding, batching."""

from __future__ import annotations

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llm_fixtures import load_tiny  # noqa: E402

from agent_envs import cli  # noqa: E402
from agent_envs.protocol import AgentAction  # noqa: E402
from baselines.llm.agents.generation import GumbelSampler  # noqa: E402
from baselines.llm.agents.hf_agent import HFAgent, PromptTooLongError  # noqa: E402
from baselines.llm.models import hf_loading  # noqa: E402
from baselines.llm.prompting.messages import plain_prompt  # noqa: E402
from baselines.llm.prompting.replies import parse_action  # noqa: E402
from wrappers.info import ChatHistory  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


ENV_ID = "agent_envs/GuessNumber-v0"
GUESSES = ["50", "25", "hello", "75", "12", "90", "3", "60", "40", "1"]


def agent_for(loaded, **kwargs):
    """Build an agent on the already-loaded tiny model (cheap)."""
    model, tokenizer = loaded
    kwargs.setdefault("max_new_tokens", 12)
    return HFAgent(model, tokenizer=tokenizer, **kwargs)


def episodes(count, steps=None, window=None):
    """Return (observations, infos) of ``count`` GuessNumber states with chat history.

    Episode ``i`` has played ``steps[i]`` guesses, so prompts differ in length.
    """
    observations, infos = [], []
    for index in range(count):
        env = ChatHistory(gym.make(ENV_ID), window=window)
        observation, info = env.reset(seed=index, options={"task_id": index})
        for guess in GUESSES[: (steps or list(range(count)))[index]]:
            observation, _, _, _, info = env.step(guess)
        observations.append(observation)
        infos.append({**info, "episode_seed": 1000 + index})
    return observations, infos


# ------------------------------------------------------------------- loading
def test_loads_from_a_folder_through_from_pretrained(tiny_path, monkeypatch):
    calls = []
    original = hf_loading.AutoModelForCausalLM.from_pretrained

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(hf_loading.AutoModelForCausalLM, "from_pretrained", spy)
    agent = HFAgent(str(tiny_path), max_new_tokens=8, device="cpu")
    assert calls and calls[0]["trust_remote_code"] is False
    assert calls[0]["dtype"] == torch.float32
    assert agent.model.device.type == "cpu" and agent.max_context == 512
    action = agent.act("I am thinking of an integer between 1 and 100.", {"episode_seed": 1})
    assert isinstance(action, AgentAction)
    assert action == parse_action(action.raw)
    assert str(tiny_path) in repr(agent)


def test_accepts_a_loaded_model_and_tokenizer(loaded):
    agent = agent_for(loaded, temperature=0)
    assert agent.model is loaded[0]
    assert isinstance(agent.act("hello", {}), AgentAction)


def test_tokenizer_may_be_given_by_path(loaded, tiny_path):
    agent = HFAgent(loaded[0], tokenizer=str(tiny_path), temperature=0, max_new_tokens=4)
    assert agent.tokenizer.padding_side == "left"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"temperature": -1.0}, ValueError),
        ({"top_p": 0.0}, ValueError),
        ({"top_p": 1.5}, ValueError),
        ({"max_new_tokens": 0}, ValueError),
        ({"batch_size": 0}, ValueError),
        ({"batch_size": 2.0}, TypeError),
        ({"dtype": "float8"}, ValueError),
        ({"max_new_tokens": 600}, ValueError),  # no room left in the 512-token context
        ({"system_prompt": 3}, TypeError),
    ],
)
def test_bad_arguments_fail_clearly(loaded, kwargs, error):
    with pytest.raises(error):
        agent_for(loaded, **kwargs)


def test_a_loaded_model_needs_its_tokenizer(loaded):
    with pytest.raises(TypeError, match="tokenizer"):
        HFAgent(loaded[0])
    with pytest.raises(TypeError, match="generate"):
        HFAgent(object(), tokenizer=loaded[1])


# ------------------------------------------------------------------- prompts
def test_uses_the_chat_template_and_the_history(loaded):
    agent = agent_for(loaded, system_prompt="Be brief.")
    observations, infos = episodes(3, steps=[0, 0, 2])
    text = agent.tokenizer.decode(agent.prompt_ids(observations[2], infos[2]))
    assert text.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n")
    assert "<|im_start|>assistant\n50<|im_end|>" in text  # an earlier action
    assert text.endswith(f"{observations[2]}<|im_end|>\n<|im_start|>assistant\n")


def test_without_history_the_prompt_is_the_observation_alone(loaded):
    agent = agent_for(loaded, system_prompt=None)
    text = agent.tokenizer.decode(agent.prompt_ids("just this", {}))
    assert text == "<|im_start|>user\njust this<|im_end|>\n<|im_start|>assistant\n"


def test_without_a_chat_template_the_plain_format_is_used(tiny_path):
    model, tokenizer = load_tiny(tiny_path, chat_template=False)
    agent = HFAgent(model, tokenizer=tokenizer, system_prompt="S", max_new_tokens=4)
    ids = agent.prompt_ids("obs", {})
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "obs"}]
    assert tokenizer.decode(ids) == plain_prompt(messages) == "System: S\n\nUser: obs\n\nAssistant:"


def test_a_template_that_refuses_the_system_role_gets_it_in_the_user_message(tiny_path):
    model, tokenizer = load_tiny(tiny_path)
    tokenizer.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}"
        "[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}[assistant] "
    )
    agent = HFAgent(model, tokenizer=tokenizer, system_prompt="Rules.", max_new_tokens=4)
    text = tokenizer.decode(agent.prompt_ids("obs", {}))
    assert text == "[user] Rules.\n\nobs\n[assistant] "


def test_long_dialogues_drop_the_oldest_exchanges_and_keep_task_and_latest(loaded):
    agent = agent_for(loaded, system_prompt="SYSTEM", max_context=200, max_new_tokens=20)
    observations, infos = episodes(1, steps=[10])
    messages = infos[0]["messages"]
    ids = agent.prompt_ids(observations[0], infos[0])
    assert len(ids) <= 180
    text = agent.tokenizer.decode(ids)
    assert "SYSTEM" in text and messages[0]["content"] in text  # task statement
    assert text.endswith(f"{observations[0]}<|im_end|>\n<|im_start|>assistant\n")
    assert "assistant\n50<|im_end|>" not in text  # the oldest action went first
    # As few exchanges as necessary were dropped: one more would not fit.
    kept = text.count("<|im_start|>assistant\n") - 1
    assert 0 < kept < 10


def test_a_prompt_that_cannot_fit_raises_a_clear_error(loaded):
    agent = agent_for(loaded, max_context=40, max_new_tokens=8)
    with pytest.raises(PromptTooLongError, match="max_new_tokens"):
        agent.act("word " * 200, {})


# ------------------------------------------------------- seeding and batching
def test_greedy_decoding_is_deterministic(loaded):
    observations, infos = episodes(4)
    first = agent_for(loaded, temperature=0).act_batch(observations, infos)
    again = agent_for(loaded, temperature=0, seed=7).act_batch(observations, infos)
    assert [a.raw for a in first] == [a.raw for a in again]


def test_sampling_is_seeded(loaded):
    observations, infos = episodes(4)
    first = agent_for(loaded, seed=3).act_batch(observations, infos)
    again = agent_for(loaded, seed=3).act_batch(observations, infos)
    other = agent_for(loaded, seed=4).act_batch(observations, infos)
    assert [a.raw for a in first] == [a.raw for a in again]
    assert [a.raw for a in first] != [a.raw for a in other]


def test_attempts_draw_different_samples(loaded):
    """Pass@K needs independent attempts: the same state, another episode_seed."""
    agent = agent_for(loaded)
    observation, info = episodes(1)[0][0], episodes(1)[1][0]
    raws = {agent.act(observation, {**info, "episode_seed": seed}).raw for seed in range(6)}
    assert len(raws) == 6


def test_turns_draw_different_samples(loaded):
    agent = agent_for(loaded)
    raws = {agent.act("same text", {"episode_seed": 1, "turn": turn}).raw for turn in range(5)}
    assert len(raws) == 5


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_batch_size_does_not_change_any_action(loaded, temperature):
    """A row's sample depends on its own seed only, not on its batch mates or padding."""
    observations, infos = episodes(8, steps=[0, 3, 1, 7, 2, 0, 5, 1])
    results = []
    for batch_size in (1, 3, 4, 8):
        agent = agent_for(loaded, temperature=temperature, batch_size=batch_size)
        results.append([a.raw for a in agent.act_batch(observations, infos)])
    assert all(result == results[0] for result in results)
    singles = agent_for(loaded, temperature=temperature)
    assert [singles.act(o, i).raw for o, i in zip(observations, infos, strict=True)] == results[0]


def test_without_episode_seed_the_agent_seed_drives_sampling(loaded):
    first = [agent_for(loaded, seed=5).act("same", {}).raw for _ in range(1)]
    agent = agent_for(loaded, seed=5)
    stream = [agent.act("same", {}).raw for _ in range(3)]
    assert stream[0] == first[0]
    assert len(set(stream)) == 3  # successive calls still differ


def test_tiny_top_p_keeps_only_the_most_likely_token(loaded):
    observations, infos = episodes(3)
    greedy = agent_for(loaded, temperature=0).act_batch(observations, infos)
    nucleus = agent_for(loaded, temperature=1.0, top_p=1e-9).act_batch(observations, infos)
    assert [a.raw for a in nucleus] == [a.raw for a in greedy]


def test_gumbel_sampler_draws_from_the_softmax():
    """The Gumbel-max trick samples exactly softmax(logits / T) (and top-p's renormalisation)."""
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    rows = 4000
    sampler = GumbelSampler(range(rows), temperature=1.0, top_p=1.0, device="cpu")
    picks = sampler(None, logits.repeat(rows, 1)).argmax(dim=-1)
    frequencies = torch.bincount(picks, minlength=4).double() / rows
    assert torch.allclose(frequencies, torch.tensor([0.5, 0.3, 0.15, 0.05]).double(), atol=0.03)
    nucleus = GumbelSampler(range(rows), temperature=1.0, top_p=0.7, device="cpu")
    picks = nucleus(None, logits.repeat(rows, 1)).argmax(dim=-1)
    frequencies = torch.bincount(picks, minlength=4).double() / rows
    assert frequencies[2:].sum() == 0  # outside the 0.7 nucleus {0.5, 0.3}
    assert torch.allclose(frequencies[:2], torch.tensor([0.625, 0.375]).double(), atol=0.03)


def test_generated_tokens_are_counted(loaded):
    agent = agent_for(loaded, max_new_tokens=6)
    agent.act_batch(*episodes(3))
    assert 3 <= agent.generated_tokens <= 18


def test_act_batch_checks_lengths(loaded):
    with pytest.raises(ValueError, match="infos"):
        agent_for(loaded).act_batch(["a", "b"], [{}])


# ------------------------------------------------------- through the evaluator
def read_log(path):
    import json

    from agent_envs.evaluation.episode_record import EpisodeRecord

    with open(path) as handle:
        lines = [json.loads(line) for line in handle]
    for line in lines:
        line.pop("run", None)  # the run's fingerprint: the agent's name holds its batch size
    for line in lines[1:]:
        for timing in EpisodeRecord.TIMINGS:
            assert line.pop(timing) >= 0  # measured, so different in each run
    return sorted(lines[1:], key=lambda line: (line["task"], line["sample"], line["budget"]))


def test_evaluate_gives_the_same_episodes_for_every_batch_size(loaded, tmp_path):
    from agent_envs.evaluation import evaluate

    logs = []
    for batch_size, agent_batch in ((1, 1), (4, 3)):
        path = tmp_path / f"run{batch_size}.jsonl"
        agent = agent_for(loaded, batch_size=agent_batch, max_new_tokens=6)
        prompt_ids, prompts = agent.prompt_ids, []

        def counted(*args, prompt_ids=prompt_ids, prompts=prompts, **kwargs):
            prompts.append(len(ids := prompt_ids(*args, **kwargs)))
            return ids

        agent.prompt_ids = counted
        result = evaluate(
            agent,
            "agent_envs/GuessNumber-v0",
            ks=[1, 2],
            budgets=[2, 3],
            tasks=2,
            samples=2,
            batch_size=batch_size,
            log_path=path,
            transcripts=True,
            n_bootstrap=20,
        )
        assert result.errors == 0 and result.episodes == 4
        logs.append(read_log(path))
        # Each episode's token counts add up to the agent's: every prompt read, every reply.
        assert sum(line["tokens_read"] for line in logs[-1]) == sum(prompts) > 0
        assert sum(line["tokens_generated"] for line in logs[-1]) == agent.generated_tokens > 0
    assert logs[0] == logs[1]  # token counts included: batching changes no prompt
    steps = [step for line in logs[0] for step in line["transcript"]["steps"]]
    assert len(steps) == 12
    # The raw generation is logged wherever parsing changed it.
    assert all(step["action"] == parse_action(step.get("raw", step["action"])) for step in steps)
    assert any("raw" in step for step in steps)
    # Attempts at the same task drew different samples.
    first = [line["transcript"]["steps"][0] for line in logs[0]]
    assert first[0].get("raw", first[0]["action"]) != first[1].get("raw", first[1]["action"])


def test_evaluate_with_chat_history_feeds_the_dialogue(loaded):
    from agent_envs.evaluation import evaluate

    seen = []
    agent = agent_for(loaded, max_new_tokens=4)
    original = agent.prompt_ids

    def spy(observation, info, key=None):
        seen.append(len(info.get("messages", ())))
        return original(observation, info, key)

    agent.prompt_ids = spy
    result = evaluate(
        agent,
        lambda: ChatHistory(gym.make(ENV_ID), window=2),
        ks=[1],
        budgets=[4],
        tasks=1,
        n_bootstrap=10,
    )
    assert result.errors == 0
    assert seen == [1, 3, 5, 5]  # the task, then up to two exchanges


def test_cli_eval_with_the_hf_agent(tiny_path, tmp_path, capsys):
    import json

    kwargs = {"model": str(tiny_path), "max_new_tokens": 4, "batch_size": 4, "device": "cpu"}
    out = tmp_path / "result.json"
    status = cli.main(
        [
            "eval",
            "agent_envs/GuessNumber-v0",
            "--agent",
            "hf",
            "--agent-kwargs",
            json.dumps(kwargs),
            "--k",
            "1,2",
            "--t",
            "2,3",
            "--tasks",
            "2",
            "--history",
            "--n-bootstrap",
            "10",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert status == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["episodes"] == 4 and result["errors"] == 0
