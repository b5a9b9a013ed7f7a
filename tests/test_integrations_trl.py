"""TRL environment_factory: a budgeted episode as a tool, unit-tested and trained through GRPO."""

from __future__ import annotations

import gymnasium as gym
import pytest

from agent_envs.env_stack import BudgetRegime
from agent_envs.integrations.trl import PROMPT, environment_factory, task_rows
from wrappers.protocol import BUDGET, TASK_ID
from wrappers.utils.seeding import episode_seed

ENV_ID = "agent_envs/GuessNumber-v0"
FIFTY = 519  # the GuessNumber task whose secret is 50
OTHER = 3


def _secret(task_id: int) -> str:
    base = gym.make(ENV_ID).unwrapped
    base.reset(seed=0, options={TASK_ID: task_id})
    return str(base.answer())


def test_the_fixtures_tasks_are_what_the_names_say():
    assert _secret(FIFTY) == "50" and _secret(OTHER) != "50"


def test_after_t_turns_the_tool_says_so_and_the_reward_stays():
    make = environment_factory(ENV_ID, 2)
    episode = make()
    assert "[Turns left: 2 of 2]" in episode.reset(task_id=OTHER)
    episode.act("hello")  # an invalid action uses a turn too
    last = episode.act("1")
    assert last.endswith("No turns left: all 2 turns are used up. The episode is over.")
    assert episode.act(_secret(OTHER)).startswith("No turns left")  # too late: nothing changes
    assert (episode.turns, episode.calls, episode.get_reward()) == (2, 3, 0.0)


def test_success_fixes_the_reward_and_ends_the_episode():
    episode = environment_factory(ENV_ID, 5)()
    episode.reset(task_id=FIFTY)
    assert episode.act("50").endswith("The episode is over: call no more tools.")
    assert episode.act("7") == "The episode is over: call no more tools."
    assert (episode.turns, episode.get_reward()) == (1, 1.0)


def test_attempts_get_the_evaluators_distinct_seeds_and_mix_budgets():
    make = environment_factory(ENV_ID, BudgetRegime.mixed([2, 4, 8, 16], visible=True), seed=7)
    episodes = [make() for _ in range(6)]
    for episode, task in zip(episodes, [1, 1, 1, 2, 2, 1], strict=True):
        episode.reset(task_id=task, prompt="ignored")
    assert [e.seed for e in episodes] == [
        episode_seed(7, 1, 0), episode_seed(7, 1, 1), episode_seed(7, 1, 2),
        episode_seed(7, 2, 0), episode_seed(7, 2, 1), episode_seed(7, 1, 3),
    ]  # fmt: skip
    assert len({e.seed for e in episodes}) == 6
    assert {e.budget for e in episodes} <= {2, 4, 8, 16} and len({e.budget for e in episodes}) > 1


def test_bad_rows_and_settings_fail_clearly():
    with pytest.raises(ValueError, match="task_id column"):
        environment_factory(ENV_ID, 3)().reset(prompt="no task")
    with pytest.raises(TypeError):
        environment_factory(ENV_ID)
    assert environment_factory(ENV_ID, 3)().act("50").startswith("No episode is running")
    assert task_rows([4])[0] == {"prompt": [{"role": "user", "content": PROMPT}], TASK_ID: 4}
    assert BUDGET not in task_rows([4])[0]


def test_the_tool_has_a_schema_transformers_can_render():
    from transformers.utils import get_json_schema

    schema = get_json_schema(environment_factory(ENV_ID, 3)().act)
    assert schema["function"]["name"] == "act"
    assert schema["function"]["parameters"]["required"] == ["action"]


def _tool_calling_model(tmp_path):
    """The tiny model, taught in a few steps to answer every turn with ``act("50")``.

    Its chat template is TRL's own Qwen3 one, which TRL recognises as tool-capable
    and parses tool calls from; a random model would never call the tool.
    """
    import torch
    from llm_fixtures import build_tiny_model, load_tiny
    from transformers import GPT2LMHeadModel
    from trl.chat_template_utils import qwen3_chat_template

    model, tokenizer = load_tiny(build_tiny_model(str(tmp_path)))
    tokenizer.chat_template = qwen3_chat_template
    model.config.n_positions = 2048  # the template's tool schema makes long prompts
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(model.config)
    call = {"type": "function", "function": {"name": "act", "arguments": {"action": "50"}}}
    reply = '<tool_call>\n{"name": "act", "arguments": {"action": "50"}}\n</tool_call><|im_end|>'
    target = tokenizer(reply, add_special_tokens=False)["input_ids"]
    tool = environment_factory(ENV_ID, 1)().act
    contexts = []
    for task in (OTHER, FIFTY):
        episode = environment_factory(ENV_ID, 1)()
        messages = [{"role": "user", "content": PROMPT + episode.reset(task_id=task)}]
        for _ in range(3):  # the turns before each of the first three calls
            contexts.append(
                tokenizer.apply_chat_template(
                    messages, tools=[tool], tokenize=False, add_generation_prompt=True
                )
            )
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            messages.append({"role": "tool", "name": "act", "content": episode.act("50")})
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(90):
        prompt = tokenizer(contexts[step % len(contexts)], add_special_tokens=False)["input_ids"]
        ids = torch.tensor([prompt + target])
        labels = ids.clone()
        labels[0, : len(prompt)] = -100
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model, tokenizer


def test_grpo_trains_through_the_tool_and_the_budget_holds(tmp_path, monkeypatch, one_torch_thread):
    pytest.importorskip("trl")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from baselines.llm.training.grpo import no_checkpointing

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model, tokenizer = _tool_calling_model(tmp_path)
    made = []
    factory = environment_factory(ENV_ID, 1)

    def tracked():
        made.append(factory())
        return made[-1]

    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), bf16=False, **no_checkpointing(),
        disable_dropout=True, report_to="none", use_cpu=True, seed=0, max_steps=1,
        per_device_train_batch_size=4, num_generations=2, max_completion_length=256,
        max_tool_calling_iterations=4, temperature=0.1, logging_steps=1,
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=args,
        train_dataset=Dataset.from_list(task_rows([FIFTY, OTHER])),
        environment_factory=tracked,
    )
    trainer.train()
    played = [episode for episode in made if episode.seed is not None]
    by_task = {task: [e for e in played if e.seed in {episode_seed(0, task, j) for j in (0, 1)}]
               for task in (FIFTY, OTHER)}  # fmt: skip
    assert len(by_task[FIFTY]) == 2 and len(by_task[OTHER]) == 2
    assert len({e.seed for e in played}) == 4  # two distinct attempts per task
    assert all(e.get_reward() == 1.0 for e in by_task[FIFTY])
    # T = 1: each episode played one turn, whatever the model did after it.
    assert all(e.turns == 1 and e.calls >= 1 for e in played)
    assert all(e.get_reward() == 0.0 for e in by_task[OTHER])
    # The model called the tool again after its episode had ended (it was taught to
    # call every turn); those calls were answered without playing: turns stayed 1.
    assert sum(e.calls for e in played) > len(played)
    logged = trainer.state.log_history[0]
    assert logged["rewards/ToolEpisode/mean"] == 0.5 and logged["tools/call_frequency"] > 1


def test_the_cpu_recipe_warm_starts_then_grpo_learns_through_the_tool(
    tmp_path, monkeypatch, one_torch_thread
):
    """The documented recipe, end to end on CPU.

    A tiny model that has never seen a tool call is warm-started on the oracle
    played through the tool (``baselines.llm.training.tool_warm_start``); one GRPO step
    through ``environment_factory`` then makes tool calls, its rewards differ
    within a group, and so its gradient is not zero.
    """
    pytest.importorskip("trl")
    import torch
    from datasets import Dataset
    from llm_fixtures import build_tiny_model, load_tiny
    from transformers import GPT2LMHeadModel
    from trl import GRPOTrainer

    from baselines.llm.training.grpo import grpo_config
    from baselines.llm.training.tool_warm_start import tool_chat_template, warm_start_tool_calls

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    env_id, tasks = "agent_envs/GuessNumber-20-v0", [0, 1, 2, 3]
    base, tokenizer = load_tiny(build_tiny_model(str(tmp_path)))
    tokenizer.chat_template = tool_chat_template()
    config = GPT2LMHeadModel.config_class(**{**base.config.to_dict(), "n_positions": 2048})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config)  # untrained: it would never call the tool
    losses = warm_start_tool_calls(model, tokenizer, env_id, tasks, steps=150, regime=4)
    assert sum(losses[-10:]) < sum(losses[:10]) / 10
    # The recipe of docs/integrations.md, as written there (plus a seed and a log line).
    args = grpo_config(
        tmp_path / "out", use_cpu=True, per_device_train_batch_size=8, num_generations=4,
        max_completion_length=256, max_tool_calling_iterations=6, temperature=0.7,
        max_steps=1, seed=0, logging_steps=1,
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=args,
        train_dataset=Dataset.from_list(task_rows(tasks[:2])),
        environment_factory=environment_factory(env_id, 4),
    )
    trainer.train()
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] > 0
    assert 0.0 < logged["rewards/ToolEpisode/mean"] < 1.0
    assert logged["frac_reward_zero_std"] < 1.0  # some group's attempts differ
    assert logged["grad_norm"] > 0.0
