"""A held cached file crosses a pickle (a spawned DataLoader worker gets readers that way):
the copy opens the file again instead of reading through a descriptor number that means
nothing, or something else, in the new process."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from streamx.exceptions import CorruptShardError
from streamx.format.held_file import HeldFile


def test_a_pickled_held_file_reads_its_own_file(tmp_path: Path) -> None:
    mine, other = tmp_path / "mine.bin", tmp_path / "other.bin"
    mine.write_bytes(b"m" * 100)
    other.write_bytes(b"o" * 100)
    held = HeldFile(str(mine), 100, "chunk 0")
    blob = pickle.dumps(held)
    held.close()
    # The closed descriptor's number now names another file, as it may in a worker.
    reused = os.open(other, os.O_RDONLY)
    try:
        copy = pickle.loads(blob)
        assert copy.pread(10, 0) == b"m" * 10
        assert copy.size == 100
    finally:
        os.close(reused)
        copy.close()


def test_a_pickled_held_file_checks_the_size_again(tmp_path: Path) -> None:
    path = tmp_path / "chunk.bin"
    path.write_bytes(b"x" * 100)
    blob = pickle.dumps(HeldFile(str(path), 100, "chunk 3"))
    path.write_bytes(b"x" * 50)
    copy = pickle.loads(blob)
    with pytest.raises(CorruptShardError, match=r"chunk 3: its cached copy .* is 50 bytes"):
        copy.pread(1, 0)


def test_a_closed_held_file_refuses_reads(tmp_path: Path) -> None:
    path = tmp_path / "c.bin"
    path.write_bytes(b"abc")
    held = HeldFile(str(path), 3, "chunk 1")
    held.close()
    with pytest.raises(ValueError, match="was closed"):
        held.pread(1, 0)
