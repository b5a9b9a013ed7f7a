"""PrefixCacheDecoder packs rows without padding and keeps each row's attention to itself."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.llm.agents.generation import generate_replies  # noqa: E402
from baselines.llm.agents.prefix_cache import PrefixCacheDecoder  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

EOS = 1


@pytest.fixture(scope="module")
def gqa_model(tmp_path_factory):
    """The GGUF tests' random tiny Llama, whose query heads share key/value heads (as SmolLM2's)."""
    from gguf_fixtures import TINY_LLAMA
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    assert TINY_LLAMA["num_attention_heads"] > TINY_LLAMA["num_key_value_heads"]
    config = LlamaConfig(**TINY_LLAMA, vocab_size=64, eos_token_id=EOS, pad_token_id=0)
    path = tmp_path_factory.mktemp("gqa") / "llama"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        LlamaForCausalLM(config).save_pretrained(path)
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def greedy(scores, rows):
    return scores.argmax(-1)


def alone(model, prompt, max_new=6):
    """The reply ``model.generate`` gives ``prompt`` in a batch of its own, cut at the end token."""
    reply = generate_replies(model, [prompt], 0, [EOS], max_new)[0]
    return reply[: next((i + 1 for i, t in enumerate(reply) if t == EOS), len(reply))]


def test_packed_rows_reply_as_each_prompt_alone_over_two_turns(gqa_model):
    # Lengths 3, 11 and 7: packed, each row must see only its own tokens.
    first = [[5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18], [20, 21, 22, 23, 24, 25, 26]]
    decoder = PrefixCacheDecoder(gqa_model, [EOS], 6)
    replies = decoder(["a", "b", "c"], first, greedy)
    assert replies == [alone(gqa_model, prompt) for prompt in first]
    # The second turn runs each row's answer after its cache, rows of 2 to 5 new tokens.
    answers = [[30, 31], [32], [33, 34, 35]]
    second = [p + r + a for p, r, a in zip(first, replies, answers, strict=True)]
    assert decoder(["a", "b", "c"], second, greedy) == [alone(gqa_model, p) for p in second]


def test_the_models_attention_is_restored_after_a_call(gqa_model):
    before = gqa_model.config._attn_implementation
    PrefixCacheDecoder(gqa_model, [EOS], 2)(["a"], [[5, 6, 7]], greedy)
    assert gqa_model.config._attn_implementation == before
    hook = gqa_model.model.layers[1].register_forward_pre_hook(_raise)
    try:
        with pytest.raises(ValueError, match="boom"):  # an error inside the forward pass
            PrefixCacheDecoder(gqa_model, [EOS], 2)(["a"], [[5, 6, 7]], greedy)
    finally:
        hook.remove()
    assert gqa_model.config._attn_implementation == before


def _raise(*args):
    raise ValueError("boom")


def test_a_model_whose_attention_bypasses_the_interface_is_refused(gqa_model):
    attention = gqa_model.model.layers[1].self_attn

    def own_attention(hidden_states, *args, **kwargs):
        return torch.zeros_like(hidden_states), None

    attention.forward = own_attention
    try:
        with pytest.raises(RuntimeError, match=r"ran 1 of its 2 layers.*prefix_cache=False"):
            PrefixCacheDecoder(gqa_model, [EOS], 2)(["a"], [[5, 6, 7]], greedy)
    finally:
        del attention.forward
    assert PrefixCacheDecoder(gqa_model, [EOS], 2)(["a"], [[5, 6, 7]], greedy)
