"""Atomic writes give files the permissions a plain ``open()`` would."""

from __future__ import annotations

import os
import stat

import pytest

from agent_envs.files import atomic_write, atomic_write_text

pytestmark = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


@pytest.fixture
def umask():
    """Set the process umask for one test and restore it after."""
    previous = os.umask(0o022)
    os.umask(previous)

    def set_to(value: int) -> None:
        os.umask(value)

    yield set_to
    os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_a_new_file_gets_0666_less_the_umask(tmp_path, umask, mask):
    umask(mask)
    plain = tmp_path / "plain.json"
    with open(plain, "w") as handle:
        handle.write("{}")
    written = atomic_write_text(tmp_path / "runs" / "result.json", "{}")
    assert mode(written) == 0o666 & ~mask == mode(plain)


def test_a_replaced_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "result.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert mode(target) == 0o640


def test_a_writer_that_recreates_the_file_still_gets_the_mode(tmp_path, umask):
    """Writers such as matplotlib may replace the temporary file; the mode is set after them."""
    umask(0o022)

    def recreate(temporary):
        os.unlink(temporary)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(descriptor, b"data")
        os.close(descriptor)

    written = atomic_write(tmp_path / "plot.png", recreate)
    assert written.read_bytes() == b"data"
    assert mode(written) == 0o644
    assert [path.name for path in tmp_path.iterdir()] == ["plot.png"]
