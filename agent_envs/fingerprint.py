"""Content fingerprints: what tells two agents, or two runs, apart.

An agent's name says how it was built (``sb3 {"path": "ta/model.zip"}``), not
what it will do: retrain into the same path and the name stays the same.  An
agent whose behaviour lives in files therefore gives a ``fingerprint``
attribute, a hash of those files' content, and the evaluator adds it to the
agent's recorded name, so that the resume check and the per-line run
fingerprint (:mod:`agent_envs.evaluation.run_log`) tell the two models apart.

Design decision (cheap but sound): a fingerprint hashes every byte of the
files that decide behaviour (a model file, or a model folder's weights,
config and tokenizer files), never of the whole folder, which also holds
outputs such as ``result.json`` that change as the run goes on.  Hashes are
cached per process by (path, size, modification time), so an agent built
several times in one run (per episode, per worker) hashes its files once.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "config.json").write_text("{}")
>>> first = folder_fingerprint(folder)
>>> _ = (folder / "result.json").write_text("{}")  # an output: not part of it
>>> folder_fingerprint(folder) == first, first.startswith("sha256:")
(True, True)
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["MODEL_FILES", "file_fingerprint", "files_fingerprint", "folder_fingerprint", "of"]

#: The files of a model folder that decide what the model does (Hugging Face layout).
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "adapter_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
    "*.model",
    "*.safetensors",
    "*.bin",
    "*.gguf",
    "*.safetensors.index.json",
    "*.bin.index.json",
)
_SHOWN = 16  # hex digits kept: 64 bits, ample to tell a user's models apart
_CACHE: dict[tuple[str, int, int], str] = {}


def _digest(path: Path) -> str:
    """Return the SHA-256 of ``path``'s bytes, cached by (path, size, mtime)."""
    status = path.stat()
    key = (str(path.resolve()), status.st_size, status.st_mtime_ns)
    if key not in _CACHE:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _CACHE[key] = digest.hexdigest()
    return _CACHE[key]


def files_fingerprint(paths: dict[str, Path]) -> str:
    """Return ``"sha256:..."`` of the named files' names, sizes and content."""
    listing = {name: [path.stat().st_size, _digest(path)] for name, path in sorted(paths.items())}
    digest = hashlib.sha256(json.dumps(listing, sort_keys=True).encode())
    return f"sha256:{digest.hexdigest()[:_SHOWN]}"


def file_fingerprint(path: str | os.PathLike[str], *more: str | os.PathLike[str]) -> str:
    """Return the fingerprint of one file (and of ``more`` files that go with it)."""
    paths = [Path(path), *(Path(extra) for extra in more)]
    return files_fingerprint({path.name: path for path in paths if path.is_file()})


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """Return the fingerprint of the :data:`MODEL_FILES` directly in a model folder."""
    found = {
        path.name: path
        for path in Path(folder).iterdir()
        if path.is_file() and any(fnmatch.fnmatch(path.name, pattern) for pattern in MODEL_FILES)
    }
    return files_fingerprint(found)


def of(policy: Any) -> str | None:
    """Return ``policy.fingerprint`` if it has a usable one, else ``None``."""
    try:
        value = getattr(policy, "fingerprint", None)
    except (OSError, ValueError):  # its files went missing: it cannot act either
        return None
    return value if isinstance(value, str) and value else None
