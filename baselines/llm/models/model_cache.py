"""The model cache: converted GGUF files, trusted only by what they hold, never by their name.

A cache entry is ``<cache>/<file stem>-<sha256 prefix>``, a Hugging Face
folder that :func:`baselines.llm.models.resolve.convert_gguf` wrote.  Anyone who can
write to the cache could plant a folder under that name, so a name proves
nothing:

- The conversion writes a manifest (:data:`MANIFEST`) into the folder: the
  source file's full SHA-256 and the SHA-256 of each file it wrote.  A load
  (:func:`verify_entry`) checks both; on any mismatch the entry is converted
  again (:func:`baselines.llm.models.resolve.convert_gguf` does that).
- An entry that is a symlink, that another user owns, or that others may
  write to is refused in one line (:func:`trusted_entry`), and left alone.

A conversion works in a staging folder ``.<entry>-<pid>-<random>`` and
renames it into place.  A conversion killed by ``kill -9`` or SIGTERM leaves
its staging folder behind; :func:`remove_stale_staging` removes those whose
process is gone, or that are older than :data:`STALE_AFTER_S`, and reports
the space freed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

from baselines.llm.models.gguf_check import ModelError

__all__ = [
    "MANIFEST",
    "STALE_AFTER_S",
    "file_sha256",
    "make_staging",
    "remove_stale_staging",
    "trusted_entry",
    "verify_entry",
    "write_manifest",
]

logger = logging.getLogger(__name__)

#: The file in each cache entry that says what was converted and what was written.
MANIFEST = "agent-envs-manifest.json"
#: A staging folder older than this (12 hours) is stale even if its process id is in use again.
STALE_AFTER_S = 12 * 3600

_STAGING = re.compile(r"^\.(?P<entry>.+)-(?P<pid>\d+)-(?P<random>[a-z0-9_]{6,})$")


def _uid() -> int:
    """This process's user id (0 where the platform has none, as on Windows)."""
    return os.getuid() if hasattr(os, "getuid") else 0


def file_sha256(path: Path) -> str:
    """Return the full SHA-256 (hex) of the file's bytes."""
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _written_files(folder: Path) -> dict[str, str]:
    """Return ``{relative path: sha256}`` of every file under ``folder`` but the manifest."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        name = path.relative_to(folder).as_posix()
        if name != MANIFEST:
            found[name] = file_sha256(path)
    return found


def write_manifest(folder: Path, source_sha256: str, source_name: str) -> None:
    """Write the manifest of a freshly converted ``folder`` (before it is renamed into place)."""
    manifest = {
        "source": source_name,
        "source_sha256": source_sha256,
        "files": _written_files(folder),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def trusted_entry(entry: Path) -> bool:
    """Return whether a cache entry exists; raise :class:`ModelError` if it must not be trusted.

    A symlink, an entry that is not a folder, one another user owns, or one
    that others may write to is refused (and left alone: the project did not
    write it).
    """
    try:
        info = entry.lstat()
    except FileNotFoundError:
        return False
    problem = None
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symlink"
    elif not stat.S_ISDIR(info.st_mode):
        problem = "is not a folder"
    elif info.st_uid != _uid():
        problem = f"belongs to another user (uid {info.st_uid})"
    elif info.st_mode & stat.S_IWOTH:
        problem = "is writable by every user"
    if problem:
        raise ModelError(
            f"the model cache entry {os.fspath(entry)!r} {problem}, so it is not used; "
            "remove it, or set $AGENT_ENVS_MODEL_CACHE to a folder of your own."
        )
    return True


def verify_entry(entry: Path, source_sha256: str) -> str | None:
    """Return why ``entry`` does not hold the conversion of the source, or ``None`` if it does.

    The manifest must name the source's full hash, and the files present
    must be exactly those it lists, each with its hash.
    """
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        listed, source = manifest["files"], manifest["source_sha256"]
    except FileNotFoundError:
        return "it has no manifest"
    except (OSError, ValueError, KeyError, TypeError):
        return "its manifest is unreadable"
    if source != source_sha256:
        return "its manifest names another source file"
    if not isinstance(listed, dict) or "config.json" not in listed:
        return "its manifest lists no model"
    present = _written_files(entry)
    for name in sorted(set(listed) | set(present)):
        if listed.get(name) != present.get(name):
            how = "is missing" if name not in present else "is not in the manifest"
            return (
                f"{name} {how}" if name not in present or name not in listed else f"{name} changed"
            )
    return None


def make_staging(entry: Path) -> Path:
    """Create the staging folder of a conversion into ``entry``: ``.<entry>-<pid>-<random>``."""
    return Path(tempfile.mkdtemp(prefix=f".{entry.name}-{os.getpid()}-", dir=entry.parent))


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # someone else's process: alive
    return True


def _is_stale(path: Path, now: float) -> bool:
    """A staging folder of ours whose process is gone, or too old to be a running conversion."""
    match = _STAGING.match(path.name)
    try:
        info = path.lstat()
    except OSError:
        return False
    ours = stat.S_ISDIR(info.st_mode) and info.st_uid == _uid()
    if match is None or not ours or int(match["pid"]) == os.getpid():
        return False
    return now - info.st_mtime > STALE_AFTER_S or not _process_alive(int(match["pid"]))


def _size(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            pass
    return total


def remove_stale_staging(cache: Path) -> int:
    """Remove the stale staging folders in ``cache``; log and return the bytes freed.

    Staging folders of the earlier naming (``.<entry>-<random>``, without a
    process id) count as stale once older than :data:`STALE_AFTER_S`.
    """
    try:
        candidates = [path for path in cache.iterdir() if path.name.startswith(".")]
    except OSError:
        return 0
    now, freed, removed = time.time(), 0, 0
    for path in candidates:
        if _is_stale(path, now) or _is_old_style_stale(path, now):
            size = _size(path)
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                freed, removed = freed + size, removed + 1
    if removed:
        logger.warning(
            "removed %d staging folder(s) left by interrupted model conversions in %s, "
            "freeing %.1f MB.",
            removed,
            cache,
            freed / 1e6,
        )
    return freed


def _is_old_style_stale(path: Path, now: float) -> bool:
    """A pre-manifest staging folder (``.<stem>-<hash16>-<random>``) older than the limit."""
    if _STAGING.match(path.name) or not re.match(r"^\..+-[0-9a-f]{16}-[a-z0-9_]{6,}$", path.name):
        return False
    try:
        info = path.lstat()
    except OSError:
        return False
    ours = stat.S_ISDIR(info.st_mode) and info.st_uid == _uid()
    return ours and now - info.st_mtime > STALE_AFTER_S
