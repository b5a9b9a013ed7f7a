"""LoRA for ``train-llm``: which adapters to train, and how the trained model is saved.

``train-llm --lora R`` wraps the model in ``peft`` low-rank adapters of rank
``R`` before the warm start and GRPO, so that only the adapters train (the
base weights stay frozen).  On a CPU this halves the update's backward pass
roughly (no weight gradients for the base) and the optimiser keeps state for
a few hundred thousand parameters instead of the whole model.

Saving: the adapters are merged into the base weights and the merged model is
saved as an ordinary Hugging Face folder, so ``--agent hf`` (and anything
else that takes a model folder) loads it without ``peft``, with the prefix
cache, at the base model's speed.  The adapters alone are also kept, in
``adapter/`` inside the output folder (a few MB; ``peft``'s
``PeftModel.from_pretrained(base, out / "adapter")`` loads them), for
continuing training or sharing without the base weights.

Needs the ``[rl]`` extra (``peft``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wrappers.errors import InvalidValue

__all__ = ["ADAPTER_FOLDER", "LoRASpec", "apply_lora", "save_model"]

#: Where the adapters alone are saved, inside the output folder.
ADAPTER_FOLDER = "adapter"


@dataclass(frozen=True)
class LoRASpec:
    """The adapters of a LoRA run.

    Args:
        r: the adapters' rank (>= 1).
        alpha: the scaling numerator (the update is scaled by ``alpha / r``);
            ``None``: ``2 * r``.
        dropout: dropout on the adapters' input, in ``[0, 1)``.  It acts in the
            warm start only: GRPO sets every dropout to 0 (``disable_dropout``),
            so that the trainer's recomputed log-probs match the sampler's.
        targets: names of the modules that get adapters (``q_proj``, ...);
            ``None``: ``peft``'s default for the architecture (``q_proj`` and
            ``v_proj`` for Llama, Qwen2 and Mistral; ``c_attn`` for GPT-2).
        layers: adapt only the last ``layers`` transformer layers; ``None``:
            all.  The backward pass then stops at the lowest adapted layer
            (nothing below it needs a gradient), so the update costs little
            more than a forward pass.
    """

    r: int
    alpha: float | None = None
    dropout: float = 0.0
    targets: tuple[str, ...] | None = None
    layers: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.r, bool) or not isinstance(self.r, int) or self.r < 1:
            raise InvalidValue(f"the LoRA rank must be an int >= 1, got {self.r!r}.")
        if self.alpha is not None and not (math.isfinite(self.alpha) and self.alpha > 0):
            raise InvalidValue(f"the LoRA alpha must be a number > 0, got {self.alpha!r}.")
        if not 0 <= self.dropout < 1:
            raise InvalidValue(f"the LoRA dropout must be in [0, 1), got {self.dropout!r}.")
        if self.targets is not None and not (self.targets and all(self.targets)):
            raise InvalidValue(f"the LoRA targets must be module names, got {self.targets!r}.")
        if self.layers is not None and (
            isinstance(self.layers, bool) or not isinstance(self.layers, int) or self.layers < 1
        ):
            raise InvalidValue(f"the LoRA layers must be an int >= 1, got {self.layers!r}.")

    def config(self, layer_count: int | None = None) -> Any:
        """Return the ``peft.LoraConfig`` of these adapters (``layer_count``: the model's)."""
        from peft import LoraConfig

        layers = None
        if self.layers is not None:
            if layer_count is None:
                raise ValueError("LoRA on the last layers needs the model's layer count.")
            layers = list(range(max(layer_count - self.layers, 0), layer_count))
        return LoraConfig(
            layers_to_transform=layers,
            r=self.r,
            lora_alpha=self.alpha if self.alpha is not None else 2 * self.r,
            lora_dropout=self.dropout,
            target_modules=list(self.targets) if self.targets else None,
            task_type="CAUSAL_LM",
        )


def apply_lora(model: Any, spec: LoRASpec) -> Any:
    """Return ``model`` wrapped in ``spec``'s adapters: only they require gradients.

    Raises:
        InvalidValue: a target that names no module of the model.
    """
    from peft import get_peft_model

    if spec.targets:
        names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
        missing = [target for target in spec.targets if target not in names]
        if missing:
            projections = ", ".join(sorted(n for n in names if "proj" in n)) or "none"
            raise InvalidValue(
                f"the LoRA targets {', '.join(missing)} name no module of the model "
                f"(its projections: {projections})."
            )
    layer_count = model.config.get_text_config().num_hidden_layers
    return get_peft_model(model, spec.config(layer_count))


def save_model(model: Any, out: Path) -> Any:
    """Save ``model`` in ``out`` as a plain model folder; return what was saved.

    A LoRA model is merged first, in float32 (its adapters alone go to
    ``out/adapter``).
    """
    import torch
    from peft import PeftModel

    if isinstance(model, PeftModel):
        model.save_pretrained(out / ADAPTER_FOLDER)
        # A bfloat16 base (precision.py) is merged in float32, so the saved
        # model keeps the adapters' float32 update whatever it is loaded in.
        model = model.to(torch.float32).merge_and_unload()
    model.save_pretrained(out)
    return model
