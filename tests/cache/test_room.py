"""A shard needed now waits for room under ``cache_limit`` instead of going over it (issue
27): another process's hold is waited out; only this process's own holds, or a ledger that
stands still for the stall bound, let the reservation go over the limit."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest

from streamx import _core
from streamx.cache.room import begin_within_limit

LIMIT = 200


def _ledger(tmp: Path) -> Any:
    files = [[str(tmp / f"shard.{i:05}.mds")] for i in range(3)]
    return _core.CacheLedger(str(tmp / ".streamx" / "ledger-room"), 3, LIMIT, files)


def _fill(ledger: Any, tmp: Path) -> None:
    """Shards 0 and 1 local, 100 bytes each: the limit is full."""
    for shard in (0, 1):
        assert ledger.begin_download(shard, 100) == ("download", [])
        (tmp / f"shard.{shard:05}.mds").write_bytes(b"\0" * 100)
        ledger.finish_download(shard, 100)


def _hold_then_release(tmp: str, held: Any, seconds: float) -> None:
    ledger = _ledger(Path(tmp))
    ledger.pin(0)
    ledger.pin(1)
    held.set()
    time.sleep(seconds)
    ledger.unpin(0)


def test_a_hold_of_another_process_is_waited_out(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _fill(ledger, tmp_path)
    held = multiprocessing.get_context("spawn").Event()
    other = multiprocessing.get_context("spawn").Process(
        target=_hold_then_release, args=(str(tmp_path), held, 1.0)
    )
    other.start()
    try:
        assert held.wait(60)
        started = time.monotonic()
        decision = begin_within_limit(ledger, 2, 100, held_here=lambda _s: 0)
        waited = time.monotonic() - started
    finally:
        other.join(60)
    # Room came only when the other process let shard 0 go: never over the limit.
    assert decision == ("download", [0])
    assert waited > 0.3
    assert ledger.usage == LIMIT
    assert not (tmp_path / "shard.00000.mds").exists()


def test_own_holds_filling_the_limit_go_over_at_once(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _fill(ledger, tmp_path)
    ledger.pin(0)
    ledger.pin(1)
    started = time.monotonic()
    decision = begin_within_limit(ledger, 2, 100, held_here=lambda _s: 200)
    # Waiting on this process's own holds would never end.
    assert time.monotonic() - started < 5
    assert decision == ("download", [])
    assert ledger.usage == LIMIT + 100


def test_a_ledger_that_stands_still_goes_over_with_a_warning(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _fill(ledger, tmp_path)
    ledger.pin(0)
    ledger.pin(1)  # held as if by another reader that never moves on
    with pytest.warns(UserWarning, match=r"cache_limit \(200 bytes of shards\) is full.*shard 2"):
        decision = begin_within_limit(ledger, 2, 100, held_here=lambda _s: 0, stall_s=0.3)
    assert decision == ("download", [])
    assert ledger.usage == LIMIT + 100


def test_a_local_shard_is_answered_at_once(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _fill(ledger, tmp_path)
    ledger.pin(0)
    ledger.pin(1)
    assert ledger.begin_download(2, 100, True) == ("noroom", [])
    # A shard already here needs no room: no wait, whoever holds the rest.
    assert begin_within_limit(ledger, 0, 100, held_here=lambda _s: 0) == ("local", [])
