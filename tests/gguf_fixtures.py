"""Write a tiny Llama as a GGUF file, offline, the way llama.cpp's converter lays it out.

Tests of :mod:`baselines.llm.models.resolve` load it back through the same code that
loads SmolLM2's shipped file, in well under a second.  The tokenizer is the
byte-level BPE of :mod:`llm_fixtures` (with its ChatML template), stored as a
``gpt2``-type GGUF vocabulary; the weights are a random tiny Llama, some of
them quantised.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

#: Small enough to convert in milliseconds; rows are multiples of the 32-wide quant blocks.
TINY_LLAMA = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
}

# HF parameter name -> GGUF tensor name ("{}" is the layer index).
_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
    "model.layers.{}.input_layernorm.weight": "blk.{}.attn_norm.weight",
    "model.layers.{}.self_attn.q_proj.weight": "blk.{}.attn_q.weight",
    "model.layers.{}.self_attn.k_proj.weight": "blk.{}.attn_k.weight",
    "model.layers.{}.self_attn.v_proj.weight": "blk.{}.attn_v.weight",
    "model.layers.{}.self_attn.o_proj.weight": "blk.{}.attn_output.weight",
    "model.layers.{}.post_attention_layernorm.weight": "blk.{}.ffn_norm.weight",
    "model.layers.{}.mlp.gate_proj.weight": "blk.{}.ffn_gate.weight",
    "model.layers.{}.mlp.up_proj.weight": "blk.{}.ffn_up.weight",
    "model.layers.{}.mlp.down_proj.weight": "blk.{}.ffn_down.weight",
}


def gguf_name(hf_name: str) -> str:
    """Return the GGUF tensor name of an HF Llama parameter."""
    parts = hf_name.split(".")
    if parts[:2] == ["model", "layers"]:
        layer = parts[2]
        key = ".".join([*parts[:2], "{}", *parts[3:]])
        return _NAMES[key].format(layer)
    return _NAMES[hf_name]


def _permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's row order for q and k (rotary halves interleaved); transformers undoes it."""
    return (
        weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def tiny_llama(tokenizer_path: Path, seed: int = 0):
    """Return a random tiny ``LlamaForCausalLM`` sized for the tokenizer at ``tokenizer_path``."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **TINY_LLAMA,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)


def write_tiny_gguf(path: Path, tokenizer_path: Path, model, quantised: str = "Q8_0") -> Path:
    """Write ``model`` and the tokenizer at ``tokenizer_path`` as a GGUF file at ``path``.

    The 2-D weights are stored as ``quantised`` (a ``GGMLQuantizationType``
    name), the norms as F32, as llama.cpp's converter does.  A type the gguf
    package cannot quantise (``Q8_1``) is written as zero blocks: a file that
    is well formed but that nothing here can dequantise.
    """
    import gguf

    config = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_freq_base(TINY_LLAMA["rope_theta"])
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    writer.add_vocab_size(config.vocab_size)
    _add_tokenizer(writer, tokenizer_path)
    kind = gguf.GGMLQuantizationType[quantised]
    for name, tensor in model.state_dict().items():
        data = tensor.detach().float().numpy()
        if name.endswith("q_proj.weight"):
            data = _permute(data, config.num_attention_heads)
        elif name.endswith("k_proj.weight"):
            data = _permute(data, config.num_key_value_heads)
        if data.ndim == 2:
            writer.add_tensor(gguf_name(name), _quantise(data, kind), raw_dtype=kind)
        else:
            writer.add_tensor(gguf_name(name), data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _quantise(data: np.ndarray, kind):
    """Quantise ``data``; a type the gguf package cannot write becomes zero blocks of its size."""
    import gguf

    try:
        return gguf.quants.quantize(data, kind)
    except NotImplementedError:
        return np.zeros(gguf.quant_shape_to_byte_shape(data.shape, kind), dtype=np.uint8)


def _add_tokenizer(writer, tokenizer_path: Path) -> None:
    """Store a byte-level BPE ``tokenizer.json`` as a gpt2-type GGUF vocabulary."""
    spec = json.loads((tokenizer_path / "tokenizer.json").read_text())
    config = json.loads((tokenizer_path / "tokenizer_config.json").read_text())
    vocab = dict(spec["model"]["vocab"])
    special = {token["content"]: token["id"] for token in spec["added_tokens"]}
    vocab.update(special)
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if token in special else 1 for token in tokens])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab[config["bos_token"]])
    writer.add_eos_token_id(vocab[config["eos_token"]])
    writer.add_pad_token_id(vocab[config["pad_token"]])
    template = config.get("chat_template") or (tokenizer_path / "chat_template.jinja").read_text()
    writer.add_chat_template(template)
