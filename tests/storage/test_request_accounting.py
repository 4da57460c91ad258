"""Requests and bytes counted by kind match what the servers saw: nginx's access log, and
the parts of an S3 object on the loopback S3 server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx
from s3_bucket import S3

from streamx.runtime import metrics
from streamx.storage import accounting, http_pool
from streamx.storage.accounting import kind_of
from streamx.storage.download import download_file
from streamx.storage.slots import LocalSlots

MIB = 1 << 20


@pytest.fixture(autouse=True)
def _own_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Counts go to a metrics directory of this test's own (another test may have left
    this process counting into its directory)."""
    monkeypatch.setenv("STREAMX_METRICS_DIR", str(tmp_path / "own-metrics"))
    (tmp_path / "own-metrics").mkdir()
    metrics.begin_epoch(0)
    yield
    metrics._forget_table()  # the next user counts where the (restored) environment says


@pytest.fixture(autouse=True)
def _small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    monkeypatch.setenv("STREAMX_HEDGE", "0")
    http_pool._close_all()
    accounting.reset()


def _delta(before: metrics.Snapshot, after: metrics.Snapshot, key: str) -> int:
    return int(after[key]) - int(before[key])  # type: ignore[literal-required]


def test_counts_match_the_nginx_access_log(tmp_path: Path) -> None:
    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    root = tmp_path / "root" / "ds"
    root.mkdir(parents=True)
    big, small = os.urandom(6 * MIB + 5), os.urandom(100_000)
    (root / "big").write_bytes(big)
    (root / "small").write_bytes(small)
    before = metrics.snapshot()
    with Nginx(tmp_path / "root") as server:
        base = f"{server.endpoint}/ds"
        download_file(
            f"{base}/big", str(tmp_path / "big"), expected_size=len(big), slots=LocalSlots(4)
        )
        download_file(f"{base}/small", str(tmp_path / "small"))  # a HEAD, then one GET
        totals = accounting.totals()
        sent = totals["GET"] + totals["RANGED_GET"] + totals["HEAD"]
        log = server.log_when(lambda entries: len(entries) >= sent)
    after = metrics.snapshot()
    assert (tmp_path / "big").read_bytes() == big
    assert (tmp_path / "small").read_bytes() == small
    ranged = [e for e in log if e.method == "GET" and e.range not in ("", "-")]
    whole = [e for e in log if e.method == "GET" and e.range in ("", "-")]
    heads = [e for e in log if e.method == "HEAD"]
    assert totals["RANGED_GET"] == len(ranged) == 7
    assert totals["GET"] == len(whole) == 1
    assert totals["HEAD"] == len(heads) == 1
    assert totals["LIST"] == totals["PUT"] == 0
    assert totals["bytes_received"] == sum(e.sent for e in log) == len(big) + len(small)
    # The same counts land in the iteration metrics.
    assert _delta(before, after, "requests_ranged_get") == 7
    assert _delta(before, after, "requests_get") == 1
    assert _delta(before, after, "requests_head") == 1
    assert _delta(before, after, "bytes_received") == len(big) + len(small)


def test_counts_on_the_s3_route(s3: S3, tmp_path: Path) -> None:
    data = os.urandom(3 * MIB + 1)
    s3.put("ds/shard.mds", data)
    download_file(
        s3.url("ds/shard.mds"), str(tmp_path / "f"), expected_size=len(data), slots=LocalSlots(4)
    )
    totals = accounting.totals()
    assert (tmp_path / "f").read_bytes() == data
    assert totals["RANGED_GET"] == 4  # 1 MiB parts
    assert totals["GET"] == totals["HEAD"] == 0
    assert totals["bytes_received"] == len(data)


def test_kinds() -> None:
    assert kind_of("GET", "/b/k", {}) == "GET"
    assert kind_of("GET", "/b/k", {"range": "bytes=0-1"}) == "RANGED_GET"
    assert kind_of("HEAD", "/b/k", {}) == "HEAD"
    assert kind_of("GET", "/b?list-type=2&prefix=ds", {}) == "LIST"
    assert kind_of("PUT", "/b/k", {}) == "PUT"
    assert kind_of("POST", "/b/k?uploads", {}) == "PUT"


def test_a_put_is_counted_with_its_bytes(s3: S3, tmp_path: Path) -> None:
    from streamx.storage import s3_put

    data = os.urandom(300_000)
    (tmp_path / "up").write_bytes(data)
    route = s3_put.put_route(s3.url("ds/up.bin"), len(data))
    assert route is not None
    s3_put.put_file(route, str(tmp_path / "up"))
    totals = accounting.totals()
    assert s3.get("ds/up.bin") == data
    assert totals["PUT"] == 1
    assert totals["bytes_sent"] == len(data)


def test_an_epochs_requests_match_the_access_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two DataLoader workers stream an epoch from nginx: the epoch's counts in the metrics
    are the requests nginx logged; the next epoch, from the cache, sends none."""
    from streamx import MDSWriter, StreamingDataLoader, StreamingDataset

    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    samples = 400
    with MDSWriter(
        out=str(tmp_path / "root" / "ds"), columns={"id": "int", "blob": "bytes"}, size_limit=60_000
    ) as writer:
        for i in range(samples):
            writer.write({"id": i, "blob": os.urandom(1_000)})
    with Nginx(tmp_path / "root") as server:
        ds = StreamingDataset(
            remote=f"{server.endpoint}/ds", local=str(tmp_path / "cache"), batch_size=8
        )
        loader = StreamingDataLoader(ds, batch_size=8, num_workers=2)
        assert sum(len(batch["id"]) for batch in loader) == samples
        first = metrics.epoch_totals()[0]
        sent = first["requests_get"] + first["requests_ranged_get"] + first["requests_head"]
        log = server.log_when(lambda entries: len(entries) >= sent)
        assert sum(len(batch["id"]) for batch in loader) == samples
        second = metrics.epoch_totals().get(1)
    assert sent == len(log) > 0
    assert first["requests_head"] == sum(1 for e in log if e.method == "HEAD")
    assert first["requests_ranged_get"] == sum(1 for e in log if e.range not in ("", "-"))
    assert first["bytes_received"] == sum(e.sent for e in log)
    assert second is not None and second["samples"] == samples
    assert second["requests_get"] + second["requests_ranged_get"] + second["requests_head"] == 0
