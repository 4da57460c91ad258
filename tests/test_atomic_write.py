"""streamx.runtime.atomic_write: the destination holds the old content or the new, never part
of either; the temporary sits beside it, goes away on an exception, takes the caller's name
where cleanup code knows one, and keeps the mode asked for."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from streamx.runtime.atomic_write import atomic_file, replacing, temp_beside, write_atomic


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_bytes_and_text_replace_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    write_atomic(str(path), b"old")
    assert path.read_bytes() == b"old"
    write_atomic(str(path), "néw")
    assert path.read_bytes() == "néw".encode()
    assert _names(tmp_path) == ["f"]


def test_an_exception_mid_write_keeps_the_old_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old content")
    with pytest.raises(RuntimeError, match="mid-write"), atomic_file(str(path)) as file:
        file.write(b"half of the new")
        file.flush()
        assert path.read_bytes() == b"old content"  # not yet replaced
        raise RuntimeError("mid-write")
    assert path.read_bytes() == b"old content"
    assert _names(tmp_path) == ["f"]


def test_the_temp_is_written_beside_the_destination(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f"
    path.parent.mkdir()
    with atomic_file(str(path)) as file:
        file.write(b"new")
        (temp,) = [n for n in _names(path.parent) if n != "f"]
        assert temp.startswith("f.tmp.")
        assert not path.exists()
    assert _names(path.parent) == ["f"]
    assert _names(tmp_path) == ["sub"]


def test_default_temp_names_are_unique_and_never_a_decompression_temp() -> None:
    names = {temp_beside("/d/shard.00000.mds") for _ in range(200)}
    assert len(names) == 200
    # cache/cached_files.py removes `<name>.tmp.<n>.<n>` (the core's decompression) when
    # stale; epoch_state skips names with ".tmp." when it lists its pass files.
    decompression = re.compile(r"shard\.00000\.mds\.tmp\.\d+\.\d+")
    for name in names:
        assert os.path.dirname(name) == "/d"
        assert ".tmp." in name
        assert decompression.fullmatch(os.path.basename(name)) is None


def test_a_caller_named_temp_is_used(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    seen: list[str] = []

    def name(dest: str) -> str:
        seen.append(os.path.join(os.path.dirname(dest), ".index.json.7.0123abcd.tmp"))
        return seen[-1]

    with atomic_file(str(path), temp=name) as file:
        file.write(b"{}")
        assert os.path.exists(seen[0])
    assert path.read_bytes() == b"{}"
    assert _names(tmp_path) == ["index.json"]


def test_modes(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_atomic(str(tmp_path / "private"), b"x", mode=0o600)
        write_atomic(str(tmp_path / "plain"), b"x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "private").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "plain").stat().st_mode) == 0o644  # as open() makes it


def test_a_link_planted_at_the_temp_name_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"the user's")
    link = tmp_path / "f.planted"
    link.symlink_to(victim)
    with pytest.raises(FileExistsError):
        write_atomic(str(tmp_path / "f"), b"evil", temp=lambda _: str(link))
    assert victim.read_bytes() == b"the user's"
    assert link.is_symlink()  # not ours: left where it was
    assert not (tmp_path / "f").exists()


def test_fsync_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr("streamx.runtime.atomic_write.os.fsync", fsync)
    write_atomic(str(tmp_path / "a"), b"x")
    assert synced == []
    write_atomic(str(tmp_path / "b"), b"x", fsync=True)
    assert len(synced) == 1


def test_replacing_renames_a_file_the_caller_made(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    with replacing(str(path)) as tmp:
        assert os.path.dirname(tmp) == str(tmp_path)
        Path(tmp).write_bytes(b"new")
        assert path.read_bytes() == b"old"
    assert path.read_bytes() == b"new"
    assert _names(tmp_path) == ["f"]


def test_replacing_removes_the_temp_on_an_exception(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    with pytest.raises(ValueError, match="bad download"), replacing(str(path)) as tmp:
        Path(tmp).write_bytes(b"partial")
        raise ValueError("bad download")
    assert path.read_bytes() == b"old"
    assert _names(tmp_path) == ["f"]
    # The caller made nothing yet: nothing to remove, and the error is the caller's.
    with pytest.raises(KeyError), replacing(str(path)):
        raise KeyError("before any file")
    assert _names(tmp_path) == ["f"]


def test_a_reader_sees_one_whole_version_or_the_other(tmp_path: Path) -> None:
    path = str(tmp_path / "f")
    versions = (b"a" * 300_000, b"b" * 200_000)
    write_atomic(path, versions[0])
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            write_atomic(path, versions[i % 2])

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(300):
            with open(path, "rb") as file:
                assert file.read() in versions
    finally:
        stop.set()
        thread.join()


def test_kill_9_mid_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    code = textwrap.dedent(
        f"""
        import time
        from streamx.runtime.atomic_write import atomic_file
        with atomic_file({str(path)!r}) as file:
            file.write(b"x" * 100_000)
            file.flush()
            print("writing", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "writing"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert path.read_bytes() == b"old"
    (temp,) = [n for n in _names(tmp_path) if n != "f"]  # what cleanup code is for
    assert temp.startswith("f.tmp.")
