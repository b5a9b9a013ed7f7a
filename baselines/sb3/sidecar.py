"""A saved SB3 model's algorithms and its JSON sidecar (``model.zip`` -> ``model.json``).

The sidecar holds what :class:`baselines.sb3.agent.SB3Agent` needs to act as
in training: the algorithm, the encoder's settings, the action vocabulary,
whether actions were masked and whether the budget was visible.
:func:`baselines.sb3.training.save_with_sidecar` writes a model and its
sidecar as one step.  Imports no torch: the algorithm classes load on demand.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from agent_envs import install_hint
from agent_envs.files import atomic_write_text, read_json_input
from wrappers.errors import InvalidValue

__all__ = [
    "ALGORITHMS",
    "SIDECAR_FORMAT",
    "STACK_SETTINGS_KEYS",
    "algorithm_class",
    "algorithm_name",
    "read_sidecar",
    "sidecar_path",
    "write_sidecar",
]

#: Algorithm name -> (module, class).  ``maskable_ppo`` reads action masks;
#: ``recurrent_ppo`` keeps an LSTM state per episode.
ALGORITHMS: dict[str, tuple[str, str]] = {
    "ppo": ("stable_baselines3", "PPO"),
    "a2c": ("stable_baselines3", "A2C"),
    "dqn": ("stable_baselines3", "DQN"),
    "maskable_ppo": ("sb3_contrib", "MaskablePPO"),
    "recurrent_ppo": ("sb3_contrib", "RecurrentPPO"),
}

#: Version of the sidecar layout; bumped when its keys change meaning.
SIDECAR_FORMAT = 1
#: The keys of the stack settings (:func:`baselines.sb3.env.stack_settings`): how the
#: policy sees and acts on the env.
STACK_SETTINGS_KEYS = ("encoding", "action_vocabulary", "action_masks", "visible_budget")
_SIDECAR_KEYS = ("format", "algo", *STACK_SETTINGS_KEYS)


def algorithm_class(name: str) -> type:
    """Return the SB3 / sb3-contrib class for an algorithm name in :data:`ALGORITHMS`."""
    if name not in ALGORITHMS:
        raise InvalidValue(f"Unknown algorithm {name!r}; choose one of {sorted(ALGORITHMS)}.")
    module, attribute = ALGORITHMS[name]
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as error:
        raise ImportError(f"Algorithm {name!r} needs {module}: {install_hint('sb3')}.") from error


def sidecar_path(model_path: str | Path) -> Path:
    """Return the JSON sidecar path for a model path (``model.zip`` -> ``model.json``)."""
    path = Path(model_path)
    return path.with_suffix(".json") if path.suffix == ".zip" else Path(f"{path}.json")


def write_sidecar(model_path: str | Path, settings: dict[str, Any]) -> Path:
    """Write ``settings`` (with :data:`SIDECAR_FORMAT`) next to the model; return its path."""
    settings = {"format": SIDECAR_FORMAT, **settings}
    missing = [key for key in _SIDECAR_KEYS if key not in settings]
    if missing:
        raise InvalidValue(f"A sidecar needs the keys {missing}.")
    path = sidecar_path(model_path)
    return atomic_write_text(path, json.dumps(settings, indent=2, sort_keys=True) + "\n")


def read_sidecar(model_path: str | Path) -> dict[str, Any]:
    """Read and check the sidecar of a model; raise ``ValueError`` with the reason if bad.

    A model without a sidecar raises ``FileNotFoundError``.
    """
    path = sidecar_path(model_path)
    if not path.exists():
        raise FileNotFoundError(
            f"No sidecar {path} next to the model: SB3Agent needs the settings file that "
            "train-sb3 writes beside model.zip."
        )
    settings = read_json_input(path, "sidecar")
    if not isinstance(settings, dict):
        raise InvalidValue(f"Sidecar {path} must hold a JSON object.")
    missing = [key for key in _SIDECAR_KEYS if key not in settings]
    if missing:
        raise InvalidValue(f"Sidecar {path} lacks {missing}; was it written by train-sb3?")
    if settings["format"] != SIDECAR_FORMAT:
        raise InvalidValue(
            f"Sidecar {path} has format {settings['format']!r}; this version reads "
            f"{SIDECAR_FORMAT}."
        )
    if settings["algo"] not in ALGORITHMS:
        raise InvalidValue(f"Sidecar {path} names unknown algorithm {settings['algo']!r}.")
    vocabulary = settings["action_vocabulary"]
    if not isinstance(vocabulary, list) or not all(isinstance(a, str) for a in vocabulary):
        raise InvalidValue(f"Sidecar {path}: action_vocabulary must be a list of str.")
    return settings


def algorithm_name(model: Any) -> str:
    """Return the :data:`ALGORITHMS` name of an SB3 model instance."""
    for name, (module, attribute) in ALGORITHMS.items():
        cls = type(model)
        if cls.__name__ == attribute and cls.__module__.split(".")[0] == module:
            return name
    raise InvalidValue(
        f"{type(model).__name__} is not one of the supported algorithms {sorted(ALGORITHMS)}."
    )
