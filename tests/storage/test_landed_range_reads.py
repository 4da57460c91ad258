"""Range reads served from the parts another process's download has landed, and readers of
a download whose owner is stopped (SIGSTOP).

nginx caps each connection at 1 MB/s. The owner process (spawned here) downloads shard 0
(4.4 MB) in parts of 1 MiB over one connection, so they land one a second; it is stopped
once its first part is in. A reader here then serves the samples of that part from the
owner's temporary file (nginx logs no ranged GET for them), and reads the others by range.

A reader of a stopped owner's shard never waits without bound: past its range budget (a
quarter of the shard) it reads on by range; a shard too small to be read by range fails
the wait with a ``TimeoutError`` naming it once the download has stalled for its
``download_retry x download_timeout``. Resumed (SIGCONT), the owner finishes the shard.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bounded import BOUND_S, wait_until, within_bound
from nginx_server import Nginx
from served_mds import write_served

from streamx import StreamingDataset
from streamx.storage.landed_parts import read_record

pytestmark = pytest.mark.remote

SAMPLES = 200
SAMPLE_BYTES = 44_000
SHARD = "shard.00000.mds"
PART = 1 << 20
Owner = tuple[multiprocessing.process.BaseProcess, str, Path]


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    root = tmp_path_factory.mktemp("landed")
    write_served(root, "ds", SAMPLES, SAMPLE_BYTES, 4_500_000)  # two shards of 4.4 MB
    write_served(root, "small", 60, SAMPLE_BYTES, 2_000_000)  # too small for range reads
    with Nginx(root / "served", limit_rate="1m") as server:
        yield server


def _check(sample: dict[str, Any], i: int) -> None:
    assert sample["i"] == i
    assert sample["x"] == bytes([i % 251]) * SAMPLE_BYTES


def _own_download(remote: str, local: str) -> None:
    """The owner: downloads shard 0 in 1 MiB parts, one at a time."""
    os.environ["STREAMX_DOWNLOAD_CONNECTIONS"] = "1"
    os.environ["STREAMX_DOWNLOAD_PART_SIZE"] = str(PART)
    StreamingDataset(remote=remote, local=local, batch_size=1).prepare_shard(0)


def _range_reads(server: Nginx, shard: str = SHARD) -> list[int]:
    """Bytes sent by each range read of ``shard`` that has ended (a range read asks for at
    most 256 KiB; the owner's parts are 1 MiB)."""
    return [
        e.sent
        for e in server.log()
        if e.uri.endswith(shard) and e.range not in ("", "-") and e.sent < PART
    ]


def _landed(local: Path, shard: str = SHARD) -> int:
    """Bytes the owner's record lists as landed from the start of the shard."""
    for path in local.glob(f".{shard}.*.parts"):
        record = read_record(str(path))
        if record is not None and record.spans and record.spans[0][0] == 0:
            return record.spans[0][1]
    return 0


def _temp_file(local: Path, shard: str) -> bool:
    return any(local.glob(f".{shard}.*.tmp"))


def _spawn_owner(remote: str, local: Path, shard: str) -> multiprocessing.process.BaseProcess:
    process = multiprocessing.get_context("spawn").Process(
        target=_own_download, args=(remote, str(local))
    )
    process.start()
    wait_until(lambda: _temp_file(local, shard))
    return process


def _end(process: multiprocessing.process.BaseProcess) -> None:
    if process.is_alive():
        assert process.pid is not None
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
    process.join(BOUND_S)


@pytest.fixture
def owner(nginx: Nginx, tmp_path: Path) -> Iterator[Owner]:
    """The owner of shard 0's download, stopped once its first part landed."""
    remote, local = f"{nginx.endpoint}/bucket/ds", tmp_path / "cache"
    process = _spawn_owner(remote, local, SHARD)
    try:
        wait_until(lambda: _landed(local) >= PART)
        assert process.pid is not None
        os.kill(process.pid, signal.SIGSTOP)
        yield process, remote, local
    finally:
        _end(process)


def test_landed_samples_come_from_the_owners_file(nginx: Nginx, owner: Owner) -> None:
    process, remote, local = owner
    before = len(_range_reads(nginx))
    ds = StreamingDataset(remote=remote, local=str(local), batch_size=1)
    _check(ds[10], 10)  # the first sample: never waits; its table and bytes have landed
    _check(ds[20], 20)
    assert len(_range_reads(nginx)) == before  # nothing asked of nginx
    _check(within_bound(lambda: ds[80]), 80)  # not landed: by range, once stalled
    nginx.log_when(lambda _: len(_range_reads(nginx)) > before)
    assert len(_range_reads(nginx)) > before
    assert process.pid is not None
    os.kill(process.pid, signal.SIGCONT)  # resumed, the owner brings the whole shard
    process.join(BOUND_S)
    assert process.exitcode == 0
    assert (local / SHARD).exists()
    assert not list(local.glob(f".{SHARD}.*"))  # its temporary file and record are gone


def test_a_stopped_owner_never_blocks_a_reader_past_its_budget(owner: Owner) -> None:
    process, remote, local = owner
    ds = StreamingDataset(remote=remote, local=str(local), batch_size=1)
    # The shard's 100 samples are 4.4 MB: four times the range budget of 1.1 MB.
    samples = within_bound(lambda: [ds[i] for i in range(100)])
    for i, sample in enumerate(samples):
        _check(sample, i)
    assert not (local / SHARD).exists()  # still the stopped owner's download
    assert process.pid is not None
    os.kill(process.pid, signal.SIGCONT)
    process.join(BOUND_S)
    assert process.exitcode == 0
    _check(ds[99], 99)


def test_a_stopped_owner_of_a_small_shard_fails_the_wait_naming_it(
    nginx: Nginx, tmp_path: Path
) -> None:
    remote, local = f"{nginx.endpoint}/bucket/small", tmp_path / "cache"
    process = _spawn_owner(remote, local, SHARD)
    try:
        assert process.pid is not None
        os.kill(process.pid, signal.SIGSTOP)
        ds = StreamingDataset(
            remote=remote, local=str(local), batch_size=1, download_retry=1, download_timeout=1
        )
        with pytest.raises(TimeoutError, match=SHARD):
            within_bound(lambda: ds[5])
        os.kill(process.pid, signal.SIGCONT)  # resumed: the shard lands, and reads
        process.join(BOUND_S)
        assert process.exitcode == 0
        _check(ds[5], 5)
    finally:
        _end(process)
