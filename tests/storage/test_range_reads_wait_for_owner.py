"""A reader in one process, and a shard another process of the node is downloading.

nginx caps each connection at 1 MB/s, so the other process (the *owner*, spawned here)
takes about four seconds to bring a 4.4 MB shard. While its download progresses, a reader
here waits for the shard rather than read its samples by range (the server's log shows no
ranged GET of it; the reader's first sample, which never waits, is one of shard 1); once
the owner stops (SIGSTOP) or dies (SIGKILL) mid-download, the reader's samples come by
range, within a bounded time, and are the right ones.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bounded import BOUND_S, wait_until, within_bound
from nginx_server import Nginx
from served_mds import write_served

from streamx import StreamingDataset

pytestmark = pytest.mark.remote

SAMPLES = 200
SAMPLE_BYTES = 44_000
SIZE_LIMIT = 4_500_000  # two shards of about 4.4 MB, each read by range when it may be
SHARD = "shard.00000.mds"
READ = [10, 50, 90]  # samples of shard 0


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    served = write_served(tmp_path_factory.mktemp("owner"), "ds", SAMPLES, SAMPLE_BYTES, SIZE_LIMIT)
    with Nginx(served, limit_rate="1m") as server:
        yield server


def _check(sample: dict[str, Any], i: int) -> None:
    assert sample["i"] == i
    assert sample["x"] == bytes([i % 251]) * SAMPLE_BYTES


def _own_download(remote: str, local: str) -> None:
    """The owner: downloads shard 0 in one GET, at the server's pace. (The node's other
    connection slots stay free: a stopped owner holds the one it took.)"""
    os.environ["STREAMX_DOWNLOAD_CONNECTIONS"] = "1"
    StreamingDataset(remote=remote, local=local, batch_size=1).prepare_shard(0)


def _range_reads(server: Nginx) -> list[int]:
    """Bytes sent by each range read of shard 0 that has ended (range reads fetch at most
    256 KiB per GET; a download's parts are larger)."""
    return [
        e.sent
        for e in server.log()
        if e.uri.endswith(SHARD) and e.range not in ("", "-") and e.sent < 1 << 20
    ]


def _temp_file(local: Path) -> bool:
    return any(local.glob(f".{SHARD}.*.tmp"))


@pytest.fixture
def owner(
    nginx: Nginx, tmp_path: Path
) -> Iterator[tuple[multiprocessing.process.BaseProcess, str, Path]]:
    """The owner process, its download of shard 0 under way; yields it, the remote and the
    cache directory."""
    remote = f"{nginx.endpoint}/bucket/ds"
    local = tmp_path / "cache"
    context = multiprocessing.get_context("spawn")
    process = context.Process(target=_own_download, args=(remote, str(local)))
    process.start()
    try:
        wait_until(lambda: _temp_file(local))  # its GET is under way
        yield process, remote, local
    finally:
        if process.is_alive():
            process.kill()
        process.join(BOUND_S)


def test_a_reader_waits_for_a_download_that_progresses(
    nginx: Nginx, owner: tuple[multiprocessing.process.BaseProcess, str, Path]
) -> None:
    process, remote, local = owner
    before = len(_range_reads(nginx))
    ds = StreamingDataset(remote=remote, local=str(local), batch_size=1)
    _check(ds[150], 150)  # shard 1, by range: a process's first samples never wait
    samples = within_bound(lambda: [ds[i] for i in READ])
    for i, sample in zip(READ, samples):
        _check(sample, i)
    assert (local / SHARD).exists()  # it waited for the owner's download
    process.join(BOUND_S)
    assert process.exitcode == 0
    assert len(_range_reads(nginx)) == before  # and read nothing by range


@pytest.mark.parametrize("stop", [signal.SIGSTOP, signal.SIGKILL], ids=["stopped", "killed"])
def test_a_stalled_download_gives_way_to_range_reads(
    nginx: Nginx,
    owner: tuple[multiprocessing.process.BaseProcess, str, Path],
    stop: signal.Signals,
) -> None:
    process, remote, local = owner
    time.sleep(0.5)  # mid-download
    assert process.pid is not None
    os.kill(process.pid, stop)
    if stop == signal.SIGKILL:
        process.join(BOUND_S)  # reaped: no live process holds the claim
    assert not (local / SHARD).exists()
    before = len(_range_reads(nginx))
    ds = StreamingDataset(remote=remote, local=str(local), batch_size=1)
    _check(ds[150], 150)  # its first samples never wait: shard 0's below do, until stalled
    samples = within_bound(lambda: [ds[i] for i in READ])
    for i, sample in zip(READ, samples):
        _check(sample, i)
    nginx.log_when(lambda _: len(_range_reads(nginx)) > before)
    assert len(_range_reads(nginx)) > before
    if stop == signal.SIGKILL:
        # The dead owner's claim is taken over: the shard lands here, whole and right.
        within_bound(lambda: ds.prepare_shard(0))
        _check(ds[99], 99)
    else:
        assert not (local / SHARD).exists()  # the stopped owner still holds the download
