"""A file a reader waits for is spread over parallel ranged GETs; a file fetched ahead of its
reader takes few, large ones. Counted from nginx's own log, as a store would bill them."""

from __future__ import annotations

import collections
import random
import time
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx

import streamx
from streamx.storage import pool
from streamx.storage.download import download_file
from streamx.storage.part_plan import (
    after_ranges,
    is_look_ahead,
    looking_ahead,
    plan_part_size,
    plan_parts,
)
from streamx.storage.slots import ConnectionSlots

MIB = 1 << 20

pytestmark = pytest.mark.remote


@pytest.fixture
def nginx_root(tmp_path: Path) -> Path:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make test installs it)")
    return tmp_path / "served"


@pytest.fixture(autouse=True)
def _fresh_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """A download pool sized by this test's settings (the process's pool keeps its size)."""
    monkeypatch.setattr(pool, "_POOLS", {})


def test_a_file_fetched_ahead_takes_larger_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMX_DOWNLOAD_PART_SIZE", raising=False)
    monkeypatch.delenv("STREAMX_DOWNLOAD_AHEAD_PART_SIZE", raising=False)
    assert not is_look_ahead()
    # Needed now, alone: spread over the 32 connections (2 MiB parts of 64 MiB).
    assert plan_part_size(64 * MIB, 32, files=1) == 2 * MIB
    with looking_ahead():
        assert is_look_ahead()
        assert plan_part_size(64 * MIB, 32, files=1) == 8 * MIB
        # A throttling host's larger part still wins.
        assert plan_part_size(64 * MIB, 32, files=1, throttled=32 * MIB) == 32 * MIB
        with looking_ahead(False):  # a nested download needed now
            assert plan_part_size(64 * MIB, 32, files=1) == 2 * MIB
    assert not is_look_ahead()
    monkeypatch.setenv("STREAMX_DOWNLOAD_AHEAD_PART_SIZE", "0")
    with looking_ahead(), pytest.raises(ValueError, match="STREAMX_DOWNLOAD_AHEAD_PART_SIZE"):
        plan_part_size(64 * MIB, 32, files=1)


def _ranged(server: Nginx, name: str) -> list[int]:
    return [e.sent for e in server.log() if e.uri.endswith(name) and e.method == "GET"]


def test_the_server_sees_few_requests_for_a_file_fetched_ahead(
    nginx_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_AHEAD_PART_SIZE", str(4 * MIB))
    size = 16 * MIB
    data = random.Random(0).randbytes(size)
    (nginx_root / "bucket").mkdir(parents=True)
    for name in ("now.bin", "ahead.bin"):
        (nginx_root / "bucket" / name).write_bytes(data)
    slots = ConnectionSlots(str(tmp_path / "slots"), 16)
    with Nginx(nginx_root) as server:
        download_file(
            f"{server.endpoint}/bucket/now.bin", str(tmp_path / "now.bin"),
            expected_size=size, slots=slots,
        )  # fmt: skip
        with looking_ahead():
            download_file(
                f"{server.endpoint}/bucket/ahead.bin", str(tmp_path / "ahead.bin"),
                expected_size=size, slots=slots,
            )  # fmt: skip
        now, ahead = _ranged(server, "now.bin"), _ranged(server, "ahead.bin")
    assert (tmp_path / "now.bin").read_bytes() == data
    assert (tmp_path / "ahead.bin").read_bytes() == data
    # Needed now: 1 MiB parts over the 16 connections; ahead: four GETs of 4 MiB.
    assert sorted(now) == [MIB] * 16
    assert sorted(ahead) == [4 * MIB] * 4


def test_a_file_read_on_from_its_parts_takes_ramping_parts(
    nginx_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard whose first samples came by range: its first bytes in small parts (they land
    first), then each part twice the last, up to the look-ahead's size."""
    monkeypatch.setenv("STREAMX_DOWNLOAD_AHEAD_PART_SIZE", str(4 * MIB))
    with after_ranges():
        sizes = [length for _, length in plan_parts(16 * MIB, 16, files=1)]
        assert sizes == [MIB, MIB, 2 * MIB, 4 * MIB, 4 * MIB, 4 * MIB]
        with looking_ahead():  # fetched ahead anyway: the look-ahead's parts
            assert [n for _, n in plan_parts(16 * MIB, 16, files=1)] == [4 * MIB] * 4
    assert [n for _, n in plan_parts(16 * MIB, 16, files=1)] == [MIB] * 16
    size = 16 * MIB
    data = random.Random(2).randbytes(size)
    (nginx_root / "bucket").mkdir(parents=True)
    (nginx_root / "bucket" / "ramp.bin").write_bytes(data)
    slots = ConnectionSlots(str(tmp_path / "slots"), 16)
    with Nginx(nginx_root) as server, after_ranges():
        download_file(
            f"{server.endpoint}/bucket/ramp.bin", str(tmp_path / "ramp.bin"),
            expected_size=size, slots=slots,
        )  # fmt: skip
        got = _ranged(server, "ramp.bin")
    assert (tmp_path / "ramp.bin").read_bytes() == data
    assert sorted(got) == sizes


def test_a_pass_fetches_its_first_shard_in_parts_and_the_look_ahead_in_few(
    nginx_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Range reads off: the first shard is waited for whole, as a compressed one would be.
    monkeypatch.setenv("STREAMX_RANGE_READS", "0")
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "8")
    monkeypatch.setenv("STREAMX_DOWNLOAD_SHARDS_AHEAD", "3")
    monkeypatch.setenv("STREAMX_DOWNLOAD_AHEAD_PART_SIZE", str(8 * MIB))
    out = nginx_root / "bucket" / "ds"
    blob = random.Random(1).randbytes(40_000)
    with streamx.MDSWriter(
        out=str(out), columns={"i": "int", "x": "bytes"}, size_limit=4 * MIB
    ) as writer:
        for i in range(400):
            writer.write({"i": i, "x": blob})
    shards = sorted(p.name for p in out.glob("shard.*.mds"))
    assert len(shards) == 4
    with Nginx(nginx_root) as server:
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/bucket/ds",
            local=str(tmp_path / "cache"),
            batch_size=4,
            predownload=4,  # the window stays in the shard being read
            shuffle=False,
        )
        cache, seen = tmp_path / "cache", []
        for sample in ds:
            seen.append(sample["i"])
            if sample["i"] == 100:
                # In shard 1, whose arrival queued the look-ahead of shards 2 and 3, the reader
                # stops until they have landed: otherwise, on loopback, it may overtake their
                # queued downloads and wait for a shard itself.
                deadline = time.monotonic() + 30
                while not all((cache / n).exists() for n in shards[2:]):
                    assert time.monotonic() < deadline, "the look-ahead never landed"
                    time.sleep(0.02)
        assert seen == list(range(400))
        gets = collections.Counter(
            e.uri.rsplit("/", 1)[-1] for e in server.log() if e.method == "GET"
        )
    # The first shard, which the reader waits for, over the connections (1 MiB parts) ...
    assert gets[shards[0]] >= 4
    # ... the look-ahead shards in one GET each (8 MiB parts of a 4 MiB shard). The second
    # may be in the pass's first chunk, which the reader waits for whole.
    assert gets[shards[1]] in (1, 4)
    assert [gets[name] for name in shards[2:]] == [1, 1]
