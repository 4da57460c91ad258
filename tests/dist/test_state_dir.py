"""The per-instance state directory: crash leftovers are collected, live ones never are, and
a read-only cache directory falls back to the temp directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import streamx
from streamx.epoch_state import _collect_dead

pytestmark = pytest.mark.dist

KW = {"batch_size": 4, "shuffle": True, "shuffle_block_size": 256, "num_canonical_nodes": 1}


def _runs(local: Path) -> list[str]:
    path = local / ".streamx" / "runs"
    return sorted(os.listdir(path)) if path.is_dir() else []


def test_dead_instances_are_collected_live_ones_kept(mds_source: Path, tmp_path: Path) -> None:
    local = tmp_path / "data"
    shutil.copytree(mds_source, local, ignore=shutil.ignore_patterns(".streamx"))
    # A process that builds a dataset and dies by SIGKILL, leaving its directory behind.
    code = (
        "import os, signal, streamx\n"
        f"ds = streamx.StreamingDataset(local={str(local)!r}, **{KW!r})\n"
        "next(iter(ds))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], check=False, timeout=120)
    assert proc.returncode == -9
    dead = _runs(local)
    assert len(dead) == 1
    live = streamx.StreamingDataset(local=str(local), **KW)  # collects the dead one
    runs = _runs(local)
    assert len(runs) == 1 and runs != dead
    _collect_dead(str(local / ".streamx" / "runs"))  # a live instance is never collected
    assert _runs(local) == runs
    ids = [int(s["id"]) for s in live]  # and still works
    assert len(ids) == 1003
    del live  # no reference cycle: the directory goes at once, without waiting for gc
    assert _runs(local) == []


def test_young_unlocked_entries_are_left_alone(tmp_path: Path) -> None:
    base = tmp_path / "runs"
    (base / ".pending-123-abc").mkdir(parents=True)  # being set up by its creator
    (base / "job-old-layout").mkdir()
    _collect_dead(str(base))
    assert sorted(os.listdir(base)) == [".pending-123-abc", "job-old-layout"]
    old = time.time() - 3600
    for name in os.listdir(base):
        os.utime(base / name, (old, old))
    _collect_dead(str(base))
    assert os.listdir(base) == []


def test_unwritable_cache_dir_uses_temp(mds_source: Path, tmp_path: Path) -> None:
    local = tmp_path / "data"
    shutil.copytree(mds_source, local, ignore=shutil.ignore_patterns(".streamx"))
    (local / ".streamx").write_text("not a directory")  # the state cannot live here
    ds = streamx.StreamingDataset(local=str(local), **KW)
    root = ds._state.root
    assert not root.startswith(str(local))
    assert os.path.isdir(root)
    assert len(list(ds)) > 0
    assert ds.next_epoch == 1
    del ds
    assert not os.path.exists(root)
