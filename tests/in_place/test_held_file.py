"""A held cached file crosses a pickle (a spawned DataLoader worker gets readers that way):
the copy opens the file again instead of reading through a descriptor number that means
nothing, or something else, in the new process."""

from __future__ import annotations

import gc
import os
import pickle
from pathlib import Path

import pytest

from streamx.exceptions import CorruptShardError
from streamx.format import held_file
from streamx.format.held_file import HeldFile, local_version


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


class _CollectingRef:
    """Stands in the open set where a file's weak reference sits; reading it runs a garbage
    collection, as any allocation of the walk over the set may."""

    def __init__(self, target: HeldFile) -> None:
        self.target = target

    def __call__(self) -> HeldFile:
        gc.collect()
        return self.target


def test_files_collected_while_the_least_recent_is_sought_are_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``MAX_OPEN`` of the user's files, the search for the least recently read one
    walks the open set. Files only a reference cycle held are closed by a collection during
    that walk (their ``__del__`` takes them out of the set): the walk goes on (it failed with
    'dictionary changed size during iteration'), they are forgotten, and the least recently
    read live file is closed to keep the limit."""
    path = tmp_path / "s.tar"
    path.write_bytes(b"t" * 64)
    version = local_version(path.stat())
    monkeypatch.setattr(held_file, "_OPEN", {})
    gc.disable()
    try:
        first = HeldFile(str(path), 64, "tar 0", version)
        for _ in range(3):
            garbage = HeldFile(str(path), 64, "tar 1", version)
            garbage.cycle = garbage  # type: ignore[attr-defined]
        del garbage
        second = HeldFile(str(path), 64, "tar 2", version)
        opened = held_file._OPEN
        opened[id(first)] = _CollectingRef(first)  # type: ignore[assignment]  # walked first
        monkeypatch.setattr(held_file, "MAX_OPEN", 2)
        third = HeldFile(str(path), 64, "tar 3", version)
    finally:
        gc.enable()
    assert set(opened) == {id(second), id(third)}
    assert first._fd is None  # the least recently read: closed, opened again at its next read
    assert second._fd is not None and third._fd is not None
    assert first.pread(4, 0) == b"tttt"
    for f in (first, second, third):
        f.close()
