"""Where ``train-llm``'s model comes from: a named model, or the tiny model built for the env.

:class:`ModelSource` is model loading's share of a run's settings;
:meth:`ModelSource.load` returns the model and its tokenizer, ready to train
(left padding, a pad token).  Importing this module imports nothing heavy:
transformers is imported when a model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wrappers.utils.validators import check_int

__all__ = ["ModelSource"]


@dataclass(frozen=True)
class ModelSource:
    """A model to train: a local one, or the built-in tiny model.

    Args:
        model: a local HF folder, a .gguf file or a short name
            (:func:`baselines.llm.models.resolve.resolve_model`); ``None`` builds the
            tiny model (:mod:`baselines.llm.models.tiny`).
        env_id: the env whose text the tiny model's tokenizer learns.
        seed: the tiny model's seed.
        context: the tiny model's context length, in tokens.

    >>> ModelSource(None, "agent_envs/GuessNumber-v0").context
    1024
    """

    model: str | None
    env_id: str
    seed: int = 0
    context: int = 1024

    def __post_init__(self) -> None:
        check_int(self.context, "context", 1)

    def load(self, out: Path) -> tuple[Any, Any]:
        """Return ``(model, tokenizer)``; the tiny model is built in ``out/base``."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = self.folder(out)
        tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left", local_files_only=True)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        return model, tokenizer

    def check(self) -> None:
        """Refuse a model that :meth:`load` would refuse, now, building and writing nothing.

        The tiny model (``model`` is ``None``) is built from the env and needs
        no check.

        Raises:
            baselines.llm.models.resolve.ModelError: ``model`` names no loadable model.
        """
        if self.model is not None:
            from baselines.llm.models.resolve import check_model

            check_model(self.model)

    def folder(self, out: Path) -> Path:
        """Return the model's local Hugging Face folder, building the tiny model in ``out/base``."""
        if self.model is None:
            from baselines.llm.models.tiny import build_tiny_model

            return build_tiny_model(out / "base", self.env_id, seed=self.seed, context=self.context)
        from baselines.llm.models.resolve import resolve_model

        return resolve_model(self.model)
