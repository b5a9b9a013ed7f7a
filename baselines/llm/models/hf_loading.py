"""Load a Hugging Face causal LM for :class:`~baselines.llm.agents.hf_agent.HFAgent` to run.

Local files only: a folder, a ``.gguf`` file or a short name goes through
:func:`baselines.llm.models.resolve.resolve_model`, which never downloads, and
transformers is told ``local_files_only``.  Needs the ``[llm]`` extra.
"""

from __future__ import annotations

import os
from typing import Any

from agent_envs import install_hint

try:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"HFAgent needs torch and transformers: {install_hint('llm')}.") from error

from baselines.llm.models.precision import resolve_dtype
from baselines.llm.models.resolve import resolve_model
from wrappers.errors import InvalidType, InvalidValue

__all__ = ["load_for_inference"]

_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}


def load_for_inference(
    model: Any, tokenizer: Any, device: str | None, dtype: Any, trust_remote_code: bool
) -> tuple[Any, Any, str]:
    """Return ``(model, tokenizer, name)``, loading whatever was given by name.

    ``model`` is a local folder, a ``.gguf`` file, a short name
    (:func:`baselines.llm.models.resolve.resolve_model`) or a model already loaded
    (then ``tokenizer`` is one too); ``device`` ``None`` means CUDA when
    there is one; ``dtype`` ``None`` means float32 on the CPU and the
    checkpoint's own elsewhere.
    """
    if device is not None and not isinstance(device, str):
        raise InvalidType(f"device must be a str such as 'cpu' or 'cuda', got {device!r}.")
    # Local files only: resolve_model refuses hub names at once, and
    # local_files_only keeps transformers itself from reaching for the hub.
    local = {"local_files_only": True, "trust_remote_code": trust_remote_code}
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = AutoTokenizer.from_pretrained(
            resolve_model(tokenizer), padding_side="left", **local
        )
    if isinstance(model, (str, os.PathLike)):
        name = os.fspath(model)
        folder = resolve_model(model)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        torch_dtype = _dtype(dtype, device)
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left", **local)
        loaded = AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype, **local)
        return loaded.to(device), tokenizer, name
    if not callable(getattr(model, "generate", None)):
        raise InvalidType(
            "model must be a local folder, a .gguf file, a short name or a loaded model with "
            f"generate(), got {type(model).__name__}."
        )
    if tokenizer is None:
        raise InvalidType("Pass tokenizer=... together with an already-loaded model.")
    if device is not None:
        model = model.to(device)
    if dtype is not None and dtype != "auto":
        model = model.to(_dtype(dtype, str(model.device)))
    name = getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__
    return model, tokenizer, name


def _dtype(dtype: Any, device: str) -> Any:
    """Return the torch dtype ``dtype`` names on ``device``.

    ``"auto"`` is, on a CPU, bfloat16 where it is native and float32 where
    not (:func:`~baselines.llm.models.precision.resolve_dtype`); elsewhere the
    checkpoint's own.
    """
    if dtype is None:
        return torch.float32 if device == "cpu" else "auto"
    if dtype == "auto" and device == "cpu":
        return _DTYPES[resolve_dtype("auto", device)]
    if isinstance(dtype, torch.dtype) or dtype == "auto":
        return dtype
    if isinstance(dtype, str) and dtype in _DTYPES:
        return _DTYPES[dtype]
    raise InvalidValue(
        f"dtype must be one of {[*_DTYPES, 'auto']} or a torch.dtype, got {dtype!r}."
    )
