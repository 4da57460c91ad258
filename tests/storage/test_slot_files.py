"""The connection-slot files are opened as the pace file is: ``O_NOFOLLOW``, created 0600,
and used only when they are regular files of this user. A symlink or a file that another
local user planted in the slots' directory is neither opened through nor locked; the slot is
skipped, and with no usable slot the process bounds its own threads."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamx.storage.slots import ConnectionSlots

NOBODY = 65534


@contextlib.contextmanager
def _locked_elsewhere(path: Path) -> Iterator[bool]:
    """Whether ``path`` is locked by some open file (a fresh open cannot lock it)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        yield True
    else:
        yield False
    finally:
        os.close(fd)


def test_a_new_slot_file_is_private(tmp_path: Path) -> None:
    slots = ConnectionSlots(str(tmp_path / "connections"), 1)
    with slots.hold():
        slot = tmp_path / "connections" / "slot-0"
        with _locked_elsewhere(slot) as locked:
            assert locked
    assert stat.S_IMODE(slot.stat().st_mode) == 0o600


def test_a_planted_symlink_is_not_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "victim"
    target.write_bytes(b"keep")
    target.chmod(0o644)
    directory = tmp_path / "connections"
    directory.mkdir()
    os.symlink(target, directory / "slot-0")
    slots = ConnectionSlots(str(directory), 2)
    with caplog.at_level(logging.WARNING, "streamx.storage.slots"), slots.hold():
        with _locked_elsewhere(target) as locked:
            assert not locked  # the link's target is not the slot
        with _locked_elsewhere(directory / "slot-1") as locked:
            assert locked  # the usable slot is
        assert ConnectionSlots(str(directory), 2).busy() == 1
    assert target.read_bytes() == b"keep"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert (directory / "slot-0").is_symlink()
    assert "slot-0" in caplog.text


@pytest.mark.skipif(os.getuid() != 0, reason="planting another user's file needs root")
def test_a_foreign_file_is_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "connections"
    directory.mkdir()
    foreign = directory / "slot-0"
    foreign.write_bytes(b"")
    os.chown(foreign, NOBODY, NOBODY)
    with caplog.at_level(logging.WARNING, "streamx.storage.slots"):
        slots = ConnectionSlots(str(directory), 1)  # its only slot: every hold looks at it
        with slots.hold(), _locked_elsewhere(foreign) as locked:
            assert not locked
    assert "not a regular file of this user" in caplog.text


def test_an_irregular_file_is_refused_and_the_threads_still_bounded(tmp_path: Path) -> None:
    """With its only slot a FIFO, the process bounds its own threads: one hold at a time."""
    directory = tmp_path / "connections"
    directory.mkdir()
    fifo = directory / "slot-0"
    os.mkfifo(fifo, 0o600)
    slots = ConnectionSlots(str(directory), 1)
    entered = threading.Event()

    def hold() -> None:
        with slots.hold():
            entered.set()

    with slots.hold():
        with _locked_elsewhere(fifo) as locked:
            assert not locked
        second = threading.Thread(target=hold)
        second.start()
        assert not entered.wait(0.3)  # the second hold waits for the first
    assert entered.wait(30)
    second.join(30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
