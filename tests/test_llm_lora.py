"""LoRA for GRPO: only the adapters train; the saved (merged) model evaluates with --agent hf."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")
torch = pytest.importorskip("torch")

from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from agent_envs import cli  # noqa: E402
from agent_envs.env_stack import BudgetRegime  # noqa: E402
from baselines.llm.models.lora import ADAPTER_FOLDER, LoRASpec, apply_lora, save_model  # noqa: E402
from baselines.llm.training.grpo import grpo_config  # noqa: E402
from baselines.llm.training.rollout import EpisodeRollout, task_prompt  # noqa: E402
from baselines.llm.training.train import main as train_main  # noqa: E402
from baselines.llm.training.train_config import PolicySettings, RolloutSettings  # noqa: E402

GUESS = "agent_envs/GuessNumber-v0"
pytestmark = pytest.mark.usefixtures("one_torch_thread")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def reply_length(completions, **_):
    """A reward that varies within every group of a random model (the outcome reward is 0)."""
    return [float(len(str(c)) % 7) for c in completions]


def test_grpo_with_lora_moves_only_the_adapters_and_saves_a_merged_model(tiny_llama_path, tmp_path):
    from datasets import Dataset
    from trl import GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama_path, padding_side="left")
    model = apply_lora(AutoModelForCausalLM.from_pretrained(tiny_llama_path), LoRASpec(4, alpha=16))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)
    policy = PolicySettings(max_new_tokens=6)
    runner = EpisodeRollout(RolloutSettings(GUESS, BudgetRegime.fixed(4), policy, seed=0))
    args = grpo_config(
        tmp_path / "ckpt",
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        steps_per_generation=2,
        num_generations=4,
        max_steps=2,
        learning_rate=1e-2,
        temperature=1.0,
        beta=0.0,
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reply_length],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": task_prompt(i)} for i in range(4)]),
        processing_class=tokenizer,
        rollout_func=runner,
    )
    trainer.train()
    model = trainer.model
    moved = {
        name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])
    }
    assert moved and moved <= trainable  # adapters moved, nothing else did
    ids = torch.tensor([tokenizer("The secret is between 1 and 100.")["input_ids"]])
    with torch.no_grad():
        adapted = model(input_ids=ids).logits
    out = tmp_path / "saved"
    save_model(model, out)
    tokenizer.save_pretrained(out)
    assert (out / ADAPTER_FOLDER / "adapter_config.json").is_file()
    assert not (out / "adapter_config.json").exists()  # a plain model folder
    merged = AutoModelForCausalLM.from_pretrained(out)
    with torch.no_grad():
        assert torch.allclose(merged(input_ids=ids).logits, adapted, atol=1e-4)


def test_train_llm_lora_quick_and_the_saved_model_evaluates_with_agent_hf(tmp_path, capsys):
    out = tmp_path / "run"
    argv = [GUESS, "--quick", "--budget", "4", "--lora", "4", "--lora-targets", "q_proj,v_proj"]
    assert train_main([*argv, "--micro-batch", "1", "--out", str(out)]) == 0
    out = out / "model"  # the model's own subfolder of the run folder
    settings = json.loads((out / "train_llm.json").read_text())["config"]
    assert settings["lora"] == {
        "r": 4,
        "alpha": None,
        "dropout": 0.0,
        "targets": ["q_proj", "v_proj"],
        "layers": None,
    }
    assert (out / ADAPTER_FOLDER).is_dir()
    capsys.readouterr()
    kwargs = json.dumps({"model": str(out), "max_new_tokens": 6, "prefix_cache": True})
    status = cli.main(
        ["eval", GUESS, "--agent", "hf", "--agent-kwargs", kwargs, "--history",
         "--history-record", "raw", "--t", "4", "--k", "1", "--tasks", "2", "--samples", "1"]
    )  # fmt: skip
    assert status == 0
    assert "Pass@" in capsys.readouterr().out


def test_lora_on_the_last_layers_leaves_the_lower_ones_without_gradient(tiny_llama_path):
    model = apply_lora(AutoModelForCausalLM.from_pretrained(tiny_llama_path), LoRASpec(4, layers=1))
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".layers.1." in name for name in trainable)  # 2 layers: only the top
    ids = torch.tensor([[5, 6, 7, 8]])
    captured = {}
    first = model.get_base_model().model.layers[0]
    first.register_forward_hook(lambda module, args, out: captured.update(out=out))
    model(input_ids=ids).logits.sum().backward()
    hidden = captured["out"][0] if isinstance(captured["out"], tuple) else captured["out"]
    assert not hidden.requires_grad  # the backward never reaches the lowest layer


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lora-alpha", "8"], "go with --lora R"),
        (["--lora-layers", "2"], "go with --lora R"),
        (["--lora", "4", "--lora-layers", "0"], "--lora-layers: the value must be an int >= 1"),
        (["--lora", "-2"], "--lora: the value must be an int >= 0"),
        (["--lora", "4", "--lora-dropout", "1.5"], "--lora-dropout: the value must be a number in"),
        (["--lora", "4", "--lora-dropout", "1"], "--lora-dropout must be below 1"),
        (["--lora", "4", "--lora-targets", "no_such_proj"], "LoRA targets no_such_proj name no"),
        (["--micro-batch", "3"], "micro_batch must divide"),
    ],
)
def test_bad_lora_flags_give_one_line_errors(argv, message, capsys, tmp_path):
    args = [GUESS, "--quick", "--eval-tasks", "0", "--warm-start", "0", "--out", str(tmp_path)]
    assert train_main([*args, *argv]) == 2
    # Loading progress bars may come first; the error is the last line, and one line.
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("agent-envs train-llm: error: ") and message in last, last
