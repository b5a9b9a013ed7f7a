"""The number format a transformers model computes in: float32, or bfloat16 where it is native.

``bfloat16`` here means one thing everywhere (training, its rollouts and
:class:`~baselines.llm.agents.hf_agent.HFAgent`): the model's frozen weights are
stored in bfloat16, and every forward pass runs under
``torch.autocast("cpu", torch.bfloat16)``, which keeps norms, softmax and the
loss in float32.  Weights that train (LoRA adapters), their gradients and the
optimizer state stay float32: peft creates the adapters in float32 over a
bfloat16 base.  A run that trains every weight has no frozen base, so it
stays in float32 (:func:`resolve_dtype`).

Measured on SmolLM2-135M with LoRA on every layer, one thread, on a CPU with
``avx512_bf16`` (``benchmarks/bf16_speed.py``; ``docs/llm_rl.md`` has the
figures): the GRPO update and decoding each cost less than half the CPU time
of float32.  Where the CPU has no native bfloat16 it is emulated and slower,
so ``auto`` picks it only where it is native.

Importing this module imports no torch: a config can name and check its
dtype before any model loads.
"""

from __future__ import annotations

import contextlib
from typing import Any

from wrappers.errors import InvalidValue

__all__ = ["DTYPES", "autocast_for", "check_dtype", "native_bfloat16", "resolve_dtype"]

#: The dtypes a training run (``train-llm --dtype``) or a study takes.
DTYPES = ("float32", "bfloat16", "auto")


def check_dtype(dtype: Any, name: str = "dtype") -> str:
    """Return ``dtype`` if it is one of :data:`DTYPES`.

    Raises:
        InvalidValue: anything else.
    """
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise InvalidValue(f"{name} must be one of {', '.join(DTYPES)}, got {dtype!r}.")
    return dtype


def native_bfloat16(device: str = "cpu") -> bool:
    """Return whether ``device`` computes bfloat16 natively (a CUDA GPU that has it, or a CPU
    with ``avx512_bf16`` or AMX); elsewhere bfloat16 is emulated, and slower than float32."""
    import torch

    if device.startswith("cuda"):
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    cpu = torch.cpu
    # torch names these checks privately; a torch without them is treated as no support.
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(callable(getattr(cpu, check, None)) and getattr(cpu, check)() for check in checks)


def resolve_dtype(dtype: str, device: str = "cpu", frozen_base: bool = True) -> str:
    """Return the dtype a run computes in: ``"float32"`` or ``"bfloat16"``.

    ``auto`` is bfloat16 where ``device`` computes it natively and the run has
    a frozen base to store in it (``frozen_base``: LoRA, or evaluation), else
    float32.

    Raises:
        InvalidValue: ``dtype`` is not one of :data:`DTYPES`, or is
            ``bfloat16`` for a run with no frozen base (full fine-tuning keeps
            its weights, and so its compute, in float32).
    """
    check_dtype(dtype)
    if dtype == "auto":
        return "bfloat16" if frozen_base and native_bfloat16(device) else "float32"
    if dtype == "bfloat16" and not frozen_base:
        raise InvalidValue(
            "dtype bfloat16 stores the frozen weights in bfloat16, and full fine-tuning has "
            "none: train LoRA adapters (--lora R) or use --dtype float32."
        )
    return dtype


def autocast_for(model: Any) -> contextlib.AbstractContextManager:
    """Return the context a forward pass of ``model`` runs in.

    bfloat16 autocast when the model's weights are bfloat16 on a CPU (its
    norms and softmax then run in float32, as on a GPU); nothing otherwise,
    so a float32 model computes exactly as without it.
    """
    import torch

    if getattr(model, "dtype", None) == torch.bfloat16 and model.device.type == "cpu":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()
