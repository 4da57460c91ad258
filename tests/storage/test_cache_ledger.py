"""The CacheLedger binding: shared accounting across processes, pickling, crash recovery."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import time
from pathlib import Path
from typing import Any

import pytest

core = pytest.importorskip("streamx._core")
if not hasattr(core, "CacheLedger"):
    pytest.skip("streamx._core has no CacheLedger yet", allow_module_level=True)
CacheLedger: Any = core.CacheLedger


def _files(tmp: Path, n: int) -> list[list[str]]:
    return [[str(tmp / f"shard.{i:05}.mds")] for i in range(n)]


def test_lru_eviction_deletes_files(tmp_path: Path) -> None:
    files = _files(tmp_path, 3)
    ledger = CacheLedger(str(tmp_path / ".streamx" / "ledger-x"), 3, 250, files)
    for shard in (0, 1):
        assert ledger.begin_download(shard, 100) == ("download", [])
        Path(files[shard][0]).write_bytes(b"\0" * 100)
        ledger.finish_download(shard, 100)
    ledger.touch(0)
    assert ledger.begin_download(0, 100) == ("local", [])
    assert ledger.begin_download(2, 100) == ("download", [1])
    assert not Path(files[1][0]).exists()
    assert ledger.state(2) == "preparing"
    ledger.abort_download(2)
    assert (ledger.usage, ledger.limit, ledger.num_shards) == (100, 250, 3)
    with pytest.raises(ValueError, match="not being downloaded by this process"):
        ledger.finish_download(2, 1)


def test_pickles_by_arguments(tmp_path: Path) -> None:
    ledger = CacheLedger(str(tmp_path / "l"), 4, None)
    ledger.sync(1, 10)
    clone = pickle.loads(pickle.dumps(ledger))
    assert clone.usage == 10 and clone.state(1) == "local" and clone.limit is None


def _hold(path: str, ready: Any) -> None:
    ledger = CacheLedger(path, 2, 100)
    ledger.begin_download(0, 60)
    ledger.pin(1)
    ready.set()
    time.sleep(60)


def test_a_killed_worker_is_recovered(tmp_path: Path) -> None:
    path = str(tmp_path / "l")
    CacheLedger(path, 2, 100).sync(1, 40)
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_hold, args=(path, ready))
    proc.start()
    assert ready.wait(60)
    ledger = CacheLedger(path, 2, 100)
    assert ledger.begin_download(0, 60) == ("wait", [])
    assert ledger.pins(1) == 1
    assert proc.pid is not None  # started
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert ledger.recover() == (1, 1)
    assert ledger.usage == 40 and ledger.pins(1) == 0
    assert ledger.begin_download(0, 80) == ("download", [1])
