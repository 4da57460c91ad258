"""The per-instance state directory: it lives in a private per-user temp directory, never in
the dataset's directory; crash leftovers are collected, live ones never are."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dist_harness import DS, LOADER

import streamx
from streamx.runtime import run_dirs
from streamx.torch.dataloader import StreamingDataLoader

pytestmark = [pytest.mark.dist, pytest.mark.timeout(300)]  # multi-process runs


@pytest.fixture
def local(mds_source: Path, tmp_path: Path) -> Path:
    """A fresh local-only copy of the dataset."""
    path = tmp_path / "data"
    shutil.copytree(mds_source, path)
    return path


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty temp directory standing in for the system one."""
    path = tmp_path / "tmp"
    path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    run_dirs._fallback_root.cache_clear()
    yield path
    run_dirs._fallback_root.cache_clear()


def _runs(local: Path) -> list[str]:
    return sorted(os.listdir(run_dirs.runs_base([str(local)])))


def _tree(path: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``path`` (itself included) with its mode, size and mtime."""
    out = {}
    for entry in [path, *path.rglob("*")]:
        info = entry.lstat()
        out[str(entry)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return out


def test_local_dataset_dir_is_left_untouched(local: Path) -> None:
    before = _tree(local)
    ds = streamx.StreamingDataset(local=str(local), **DS)
    assert not ds._state.root.startswith(str(local))
    assert len(list(ds)) == 1003
    loader = StreamingDataLoader(ds, batch_size=4, **LOADER)
    for step, _ in enumerate(loader):
        if step == 5:
            break
    state = loader.state_dict()
    assert state is not None
    resumed = streamx.StreamingDataset(local=str(local), **DS)
    resumed.load_state_dict(state)
    loader = StreamingDataLoader(resumed, batch_size=4, **LOADER)
    assert sum(len(batch["id"]) for batch in loader) == 1003 - state["sample_in_epoch"]
    del loader, ds, resumed
    assert _tree(local) == before


def test_state_lives_in_a_private_user_root(local: Path, private_tmp: Path) -> None:
    loose = private_tmp / f"streamx-{os.getuid()}"
    loose.mkdir(mode=0o755)  # ours, but readable by others: tightened, not distrusted
    loose.chmod(0o755)
    ds = streamx.StreamingDataset(local=str(local), **DS)
    root = Path(ds._state.root)
    assert root.is_relative_to(loose)
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    del ds
    assert not root.exists()


@pytest.mark.parametrize("planted", ["symlink", "foreign", "world_writable"])
def test_untrusted_user_root_is_not_used(
    local: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    if planted == "foreign":  # owned by the real user, which now looks like somebody else
        monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 1)
    name = private_tmp / f"streamx-{os.getuid()}"
    elsewhere = private_tmp / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if planted == "symlink":
        name.symlink_to(elsewhere)
    else:
        name.mkdir()
        name.chmod(0o777 if planted == "world_writable" else 0o700)
    with pytest.warns(UserWarning, match="not a private directory"):
        ds = streamx.StreamingDataset(local=str(local), **DS)
    root = Path(ds._state.root)
    assert not root.is_relative_to(name) and not root.is_relative_to(elsewhere)
    assert stat.S_IMODE(root.parent.parent.parent.stat().st_mode) == 0o700
    assert len(list(ds)) == 1003
    del ds
    assert os.listdir(elsewhere) == []


def test_dead_instances_are_collected_live_ones_kept(local: Path) -> None:
    # A process that builds a dataset and dies by SIGKILL, leaving its directory behind.
    code = (
        "import os, signal, streamx\n"
        f"ds = streamx.StreamingDataset(local={str(local)!r}, **{DS!r})\n"
        "next(iter(ds))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], check=False, timeout=120)
    assert proc.returncode == -9
    dead = _runs(local)
    assert len(dead) == 1
    live = streamx.StreamingDataset(local=str(local), **DS)  # collects the dead one
    runs = _runs(local)
    assert len(runs) == 1 and runs != dead
    run_dirs.collect_dead(run_dirs.runs_base([str(local)]))  # a live one is never collected
    assert _runs(local) == runs
    ids = [int(s["id"]) for s in live]  # and still works
    assert len(ids) == 1003
    del live  # no reference cycle: the directory goes at once, without waiting for gc
    assert _runs(local) == []


def test_pending_entries_get_a_grace_period(tmp_path: Path) -> None:
    base = tmp_path / "runs"
    (base / ".pending-123-abc").mkdir(parents=True)  # being set up by its creator
    (base / "123-unlocked").mkdir()  # a full name is locked by its creator before it appears
    run_dirs.collect_dead(str(base))
    assert os.listdir(base) == [".pending-123-abc"]
    old = time.time() - 3600
    os.utime(base / ".pending-123-abc", (old, old))
    run_dirs.collect_dead(str(base))
    assert os.listdir(base) == []


_CHURN = """
import sys
from streamx.runtime import run_dirs
for _ in range(int(sys.argv[2])):
    base = run_dirs.runs_base([sys.argv[1]])
    root, fd = run_dirs.create_locked(base)
    run_dirs.release(root, fd, __import__("os").getpid())
print("ok")
"""


def test_instances_over_other_dirs_never_collect_a_base_being_made(tmp_path: Path) -> None:
    """Each new instance removes the empty bases of other local directories; an instance
    being made over those directories at that instant still gets its state directory.

    Three processes over three local directories (nodes of a one-host test) create and
    release instances as fast as they can, each collecting the other's base whenever it is
    empty for an instant."""
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHURN, str(tmp_path / f"node{n}"), "400"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "ok"
