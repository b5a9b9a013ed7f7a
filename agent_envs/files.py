"""Write output files whole or not at all, and check output paths before a run.

Every file the project writes (results, comparisons, plots, sidecars, models)
goes through :func:`atomic_write`: the content is written to a temporary file
beside the target, flushed to disk, and renamed onto the target.  A rename
within one folder is atomic, so a crash, a full disk or Ctrl-C leaves either
the old file or the new one, never a cut one, and no temporary file behind.
The file gets the permissions a plain ``open()`` would give it: a new file
``0o666`` less the umask, a replaced file its old mode.
A folder of several files (a saved model) goes through :func:`save_folder`,
which replaces each file whole in the same way.
Every ``OSError`` raised here names the path it was about.

Two more rules hold for every command:

* a file a user gives as input (a result, a comparison, a bench result, a run
  log) is read by :func:`read_input`, which takes regular files only (never
  ``/dev/zero`` or a pipe) and at most a bounded number of bytes;
* a file or folder a command deletes in its own run folder is deleted by
  :func:`remove_inside`, which never follows a symbolic link out of it.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> atomic_write_text(folder / "a" / "b.txt", "hello").read_text()
'hello'
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from wrappers.errors import InvalidValue

__all__ = [
    "MAX_LOG_BYTES",
    "MAX_RESULT_BYTES",
    "add_run_folder_flags",
    "atomic_write",
    "atomic_write_text",
    "check_inside",
    "check_output_path",
    "open_input",
    "path_error",
    "read_input",
    "read_json_input",
    "remove_inside",
    "save_folder",
]

#: The largest result, comparison or bench result JSON read (256 MiB).  Design
#: decision: a result of the largest run allowed (a million episodes) is tens
#: of MiB, and the file is parsed whole, so a bigger file is not one of ours.
MAX_RESULT_BYTES = 256 << 20
#: The largest run log read (4 GiB): a million episodes, each with a clipped
#: transcript, fit; a log is read to resume a run or to show its transcripts.
MAX_LOG_BYTES = 4 << 30


def path_error(exc: OSError, path: str | os.PathLike[str], doing: str = "write") -> OSError:
    """Return ``exc`` as an ``OSError`` whose one-line message names ``path``."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    error = OSError(exc.errno, f"cannot {doing} {os.fspath(path)}: {reason}")
    error.filename = os.fspath(path)
    return error


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(temporary_path)``, then rename the temporary file onto ``path``.

    The temporary file lies in ``path``'s folder (created if missing) and keeps
    ``path``'s suffix, for writers that choose the format by it (matplotlib,
    Stable-Baselines3's ``.zip``).  On any failure it is removed and ``path``
    is left as it was.

    Raises:
        OSError: naming ``path``, when the folder or the file cannot be written.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary, mode = _new_temporary(target)
    except OSError as exc:
        raise path_error(exc, target) from None
    try:
        write(temporary)
        with open(temporary, "rb+") as written:
            os.fsync(written.fileno())  # on disk before the rename makes it the file
        # A writer may have replaced the temporary file; the mode is set last.
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as exc:
        raise path_error(exc, target) from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return target


def save_folder(out: Path, *savers: Callable[[str], object]) -> None:
    """Let each of ``savers`` write into a staging folder, then move every file into ``out``.

    ``save_pretrained`` writes several files; staged this way, each file of
    ``out`` is replaced whole (one atomic rename each), so a crash or a full
    disk never leaves a cut weight file where a model was.
    """
    try:
        with tempfile.TemporaryDirectory(dir=out, prefix=".saving-") as staging:
            for save in savers:
                save(staging)
            for item in sorted(Path(staging).iterdir()):
                if item.is_dir() and (out / item.name).is_dir():  # a LoRA adapter folder
                    shutil.rmtree(out / item.name)
                os.replace(item, out / item.name)
    except OSError as exc:
        raise path_error(exc, out) from None


def _new_temporary(target: Path) -> tuple[Path, int]:
    """Create an empty temporary file beside ``target``; return it and the mode to give it.

    ``tempfile.mkstemp`` would make it ``0o600`` whatever the umask, so a
    teammate or a web server could not read the result.  The file is created
    with ``0o666`` instead, which the kernel narrows by the umask exactly as
    for ``open()``; an existing ``target`` keeps its own mode.
    """
    for _ in range(100):
        name = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp{target.suffix}"
        try:
            handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        try:
            mode = stat.S_IMODE(os.fstat(handle).st_mode)
        finally:
            os.close(handle)
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(os.stat(target).st_mode)
        return name, mode
    raise FileExistsError(f"no free temporary name beside {target}")


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` with :func:`atomic_write`; return the path."""
    return atomic_write(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def check_output_path(path: str | os.PathLike[str], what: str) -> Path:
    """Return ``path`` if a file can be written there, else raise a one-line ``ValueError``.

    Run before the first episode, so that a run is never lost to an output
    path that fails at the end: the path must not be empty or a folder, an
    existing file must be a regular file, and the nearest folder that exists
    above it must be a folder (not a file, as in ``README.md/x.json``) in
    which a file can really be created: a temporary file is made there and
    removed, since :func:`atomic_write` writes one there.  That probe, not the
    permission bits, is what holds for root and for special file systems
    such as ``/proc``.  Folders are made only when writing.
    """
    if not os.fspath(path).strip():
        raise InvalidValue(f"{what} is empty; give a file path such as out.json.")
    target = Path(path)
    if target.is_dir():
        raise InvalidValue(f"{what} {target} is a directory; give a file path inside it.")
    if target.exists() and not target.is_file():
        raise InvalidValue(f"{what} {target} is not a regular file; give a file path.")
    ancestor = target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InvalidValue(
            f"{what} {target} cannot be written: {ancestor} is a file, not a folder."
        )
    try:
        handle, name = tempfile.mkstemp(dir=ancestor, prefix=".agent-envs-check.")
        os.close(handle)
        os.unlink(name)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InvalidValue(f"{what} {target} cannot be written: in {ancestor}: {reason}.") from None
    if target.exists() and not os.access(target, os.W_OK):
        raise InvalidValue(f"{what} {target} cannot be written: the file is read-only.")
    return target


def open_input(path: str | os.PathLike[str], what: str, limit: int = MAX_RESULT_BYTES) -> IO[bytes]:
    """Open the input file ``path`` (``what`` names it in messages) for reading bytes.

    Only a regular file of at most ``limit`` bytes is opened: a device such as
    ``/dev/zero`` never ends and a pipe may never answer, so reading either
    whole would exhaust memory or hang.  The file is opened without blocking
    and checked on the open descriptor, so that what is checked is what is read.

    Raises:
        InvalidValue: one line naming ``path``: missing, unreadable, not a
            regular file, or larger than ``limit``.
    """
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InvalidValue(f"cannot read {what} {os.fspath(path)}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidValue(f"{what} {os.fspath(path)} is not a regular file; give a file.")
        if info.st_size > limit:
            raise InvalidValue(
                f"{what} {os.fspath(path)} is {info.st_size:,} bytes, more than the "
                f"{limit:,} bytes read at most; give a file agent-envs wrote."
            )
        os.set_blocking(handle, True)
        return os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise


def read_input(path: str | os.PathLike[str], what: str, limit: int = MAX_RESULT_BYTES) -> bytes:
    """Return the bytes of the input file ``path``, checked by :func:`open_input`.

    At most ``limit`` bytes are read, even from a file that grows meanwhile.
    """
    with open_input(path, what, limit) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise InvalidValue(
                f"cannot read {what} {os.fspath(path)}: {exc.strerror or exc}"
            ) from None
    if len(data) > limit:
        raise InvalidValue(f"{what} {os.fspath(path)} is larger than {limit:,} bytes.")
    return data


def read_json_input(path: str | os.PathLike[str], what: str, hint: str = "") -> Any:
    """Return the JSON in the input file ``path`` (:func:`read_input`), with one-line errors.

    ``hint`` ends the message for a file that is not JSON (what to give instead).
    """
    data = read_input(path, what)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidValue(f"{what} {os.fspath(path)} is not UTF-8 text.{hint}") from None
    except json.JSONDecodeError as exc:
        raise InvalidValue(
            f"{os.fspath(path)} is not JSON ({exc.msg} at line {exc.lineno}).{hint}"
        ) from None
    except RecursionError:
        raise InvalidValue(
            f"{os.fspath(path)} is not a {what}: its JSON is nested too deeply."
        ) from None
    except ValueError as exc:  # an integer too long to convert, say
        raise InvalidValue(f"{os.fspath(path)} is not a {what}: {exc}.") from None


def check_inside(folder: str | os.PathLike[str], name: str) -> Path:
    """Return the real path of ``name`` in ``folder``, refusing one that lies outside it.

    ``name`` is relative (a folder name may end with ``/``); an absolute name,
    a ``..`` part or a symbolic link on the way that leads out of the real
    folder is refused.  ``name`` itself may be a symbolic link: the path
    returned is the link, not where it points.

    Raises:
        InvalidValue: ``name`` lies outside ``folder``.
    """
    root = Path(folder).resolve()
    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise InvalidValue(f"{name!r} is not a path inside {os.fspath(folder)}.")
    parent = (root / relative).parent.resolve()
    if parent != root and root not in parent.parents:
        raise InvalidValue(
            f"{name!r} leads out of {os.fspath(folder)} through a symbolic link (to {parent})."
        )
    return parent / relative.name


def remove_inside(folder: str | os.PathLike[str], name: str) -> None:
    """Delete the file or folder ``name`` in ``folder``, never anything outside it.

    The path is checked by :func:`check_inside`; a symbolic link is removed
    itself, never what it points to, and a folder is removed with the links
    in it (not their targets).  A missing one is no error.

    Raises:
        InvalidValue: ``name`` lies outside ``folder``; nothing is deleted.
        OSError: naming the path, when it cannot be deleted.
    """
    target = check_inside(folder, name)
    try:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise path_error(exc, target, "delete") from None


def add_run_folder_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--resume`` and ``--overwrite`` (exclusive) of a training command's run folder.

    The training command's run folder reads them: ``--overwrite`` removes what its marker
    lists.
    """
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out: reuse a model trained with the same settings and "
        "resume its evaluation (training that was cut off starts again)",
    )
    existing.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run in --out: every file and folder it wrote there (models, "
        "result, log) is removed first, and nothing else",
    )
