"""A Parquet row group fetched as parallel ranged parts, against nginx, moto's S3 server and
scripted servers that change a file mid-way or stall mid-body."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from https_certs import trust_test_ca
from nginx_server import LogEntry, Nginx, find_nginx, max_overlap  # tests/storage, on the path
from scripted_http import Request, ScriptedServer, serve_bytes

import streamx
from streamx import ParquetStream, StreamingDataset
from streamx.exceptions import StaleIndexError
from streamx.format.parquet.chunks import GAP_BYTES, ranged_parts
from streamx.storage import accounting
from streamx.storage.errors import DownloadTimeoutError

MIB = 1 << 20
ROWS, GROUP, IMAGE = 48, 24, 256 << 10  # two row groups of 6 MiB of "images" each


def _parquet() -> bytes:
    rng = np.random.default_rng(7)
    data = pa.table(
        {
            "id": list(range(ROWS)),
            "image": [rng.bytes(IMAGE) for _ in range(ROWS)],
            "w": [3 * i for i in range(ROWS)],
        }
    )
    buf = io.BytesIO()
    pq.write_table(data, buf, row_group_size=GROUP)
    return buf.getvalue()


@pytest.fixture(scope="module")
def parquet() -> bytes:
    return _parquet()


@pytest.fixture
def parts_of_1mib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    # The row group's own download, counted alone (no first pages read by range before it).
    monkeypatch.setenv("STREAMX_RANGE_READS", "0")


def _served(tmp_path: Path, data: bytes) -> Path:
    root = tmp_path / "served"
    root.mkdir()
    (root / "t.parquet").write_bytes(data)
    return root


def _nginx(
    root: Path, limit_rate: str | None = None, tls: tuple[Path, Path] | None = None
) -> Nginx:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    return Nginx(root, limit_rate=limit_rate, tls=tls)


def _trusted(directory: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A server certificate (chain, key) that this process's clients trust."""
    directory.mkdir()
    certs = trust_test_ca(directory, monkeypatch, ("AWS_CA_BUNDLE", "SSL_CERT_FILE"))
    return certs.chain, certs.key


def _span(entry: LogEntry) -> tuple[int, int]:
    """``(start, length)`` of a ranged GET."""
    found = re.fullmatch(r"bytes=(\d+)-(\d+)", entry.range)
    assert found is not None, entry
    return int(found[1]), int(found[2]) + 1 - int(found[1])


def _chunks(ds: StreamingDataset, shard: int) -> list[tuple[int, int]]:
    return [(int(s), int(n)) for s, n in ds.shards[shard].extra["chunks"]]


def _local(ds: StreamingDataset, shard: int) -> str:
    info = ds.shards[shard]
    return str(info.local_path(info.raw_data))


def _expected_rows(data: bytes, columns: list[str] | None = None) -> list[dict[str, Any]]:
    return list(pq.read_table(io.BytesIO(data), columns=columns).to_pylist())


def _parts_of(server: Nginx, start: int, length: int) -> list[LogEntry]:
    """The ranged GETs within ``[start, start + length)``, once the log holds them all."""
    parts = ranged_parts([(start, length)], MIB)

    def ours(entries: list[LogEntry]) -> list[LogEntry]:
        ranged = [e for e in entries if e.range.startswith("bytes=")]
        return [e for e in ranged if sum(_span(e)) <= start + length]

    found = ours(server.log_when(lambda entries: len(ours(entries)) >= len(parts)))
    assert sorted(_span(e) for e in found) == parts  # the row group's bytes, once each
    assert [e.status for e in found] == [206] * len(found)
    return found


def test_a_row_group_arrives_as_parallel_ranged_parts(
    tmp_path: Path, parquet: bytes, parts_of_1mib: None
) -> None:
    # Capped per connection as a store caps each GET: parts that overlap came in parallel.
    with _nginx(_served(tmp_path, parquet), limit_rate="8m") as server:
        stream = ParquetStream(remote=f"{server.endpoint}/t.parquet", local=str(tmp_path / "c"))
        ds = StreamingDataset(streams=[stream], batch_size=4)
        start, length = _chunks(ds, 0)[0]  # every column: one range
        assert length > 5 * MIB
        path = _local(ds, 0)
        seen: list[int] = []
        stop = threading.Event()

        def watch() -> None:  # the local file is whole whenever it is there
            while not stop.is_set():
                try:
                    seen.append(os.stat(path).st_size)
                except FileNotFoundError:
                    pass

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            first = ds[0]
        finally:
            stop.set()
            watcher.join()
        data = _parts_of(server, start, length)
    assert first == _expected_rows(parquet)[0]
    assert set(seen) <= {length}
    assert len(data) >= 6 and max_overlap(data) >= 2
    with open(path, "rb") as f:  # the local layout: the chunks back to back
        assert f.read() == parquet[start : start + length]


# aiohttp (fsspec's listing) reads the CA bundle once, at import: a fresh process trusts it.
_READ_FIRST = """
import json, sys
import pyarrow.parquet as pq
from streamx import ParquetStream, StreamingDataset
ds = StreamingDataset(streams=[ParquetStream(remote=sys.argv[1], local=sys.argv[2])])
row = ds[0]
print(json.dumps([row == pq.read_table(sys.argv[3]).slice(0, 1).to_pylist()[0],
                  ds.shards[0].extra["chunks"]]))
"""


def test_parallel_ranged_parts_over_https(
    tmp_path: Path, parquet: bytes, parts_of_1mib: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    tls = _trusted(tmp_path / "certs", monkeypatch)
    root = _served(tmp_path, parquet)
    package = os.path.dirname(os.path.dirname(streamx.__file__))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]))
    with _nginx(root, limit_rate="8m", tls=tls) as server:
        url, local = f"{server.endpoint}/t.parquet", str(tmp_path / "c")
        args = [sys.executable, "-c", _READ_FIRST, url, local, str(root / "t.parquet")]
        done = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        same, chunks = json.loads(done.stdout)
        ((start, length),) = chunks
        data = _parts_of(server, start, length)
    assert same
    assert len(data) >= 6 and max_overlap(data) >= 2


def test_rows_and_a_projection_over_nginx(
    tmp_path: Path, parquet: bytes, parts_of_1mib: None
) -> None:
    meta = pq.ParquetFile(io.BytesIO(parquet)).metadata
    projected = sum(
        meta.row_group(g).column(c).total_compressed_size
        for g in range(meta.num_row_groups)
        for c in (0, 2)  # id and w, around the images
    )
    with _nginx(_served(tmp_path, parquet)) as server:
        url = f"{server.endpoint}/t.parquet"
        whole = StreamingDataset(streams=[ParquetStream(remote=url, local=str(tmp_path / "a"))])
        assert [whole[i] for i in range(ROWS)] == _expected_rows(parquet)
        stream = ParquetStream(remote=url, local=str(tmp_path / "b"), columns=["id", "w"])
        ds = StreamingDataset(streams=[stream])
        accounting.reset()
        rows = [ds[i] for i in range(ROWS)]
    assert rows == _expected_rows(parquet, ["id", "w"])
    fetched = sum(length for s in range(2) for _, length in _chunks(ds, s))
    assert accounting.totals()["bytes_received"] == fetched <= projected
    assert all(len(_chunks(ds, s)) == 2 for s in range(2))  # the images lie between


def test_rows_over_s3_in_ranged_parts(
    s3: Any, tmp_path: Path, parquet: bytes, parts_of_1mib: None
) -> None:
    s3.put("pq/t.parquet", parquet)
    stream = ParquetStream(remote=s3.url("pq/t.parquet"), local=str(tmp_path / "c"))
    ds = StreamingDataset(streams=[stream])
    accounting.reset()
    assert [ds[i] for i in range(ROWS)] == _expected_rows(parquet)
    parts = sum(len(ranged_parts(_chunks(ds, s), MIB)) for s in range(2))
    assert parts >= 12
    assert accounting.totals()["RANGED_GET"] == parts
    assert accounting.totals()["bytes_received"] == sum(
        n for s in range(2) for _, n in _chunks(ds, s)
    )


class _Rewritten:
    """Serves the file as version 1 to its first ``until`` data GETs, then as version 2 (same
    size, other bytes): a file rewritten on the server while a row group downloads."""

    def __init__(self, data: bytes, until: int) -> None:
        self.versions = [(data, '"v1"'), (data[:4] + bytes(len(data) - 8) + data[-4:], '"v2"')]
        self.data_gets, self.until, self.footer_at = (
            0,
            until,
            len(data) - (32 << 10),
        )  # the footer read: its last 32 KiB
        self.lock = threading.Lock()

    def __call__(self, request: Request, handler: BaseHTTPRequestHandler) -> None:
        found = re.match(r"bytes=(\d+)-", request.headers.get("range", ""))
        with self.lock:
            if request.method == "GET" and found and int(found[1]) < self.footer_at:
                self.data_gets += 1
            data, etag = self.versions[self.data_gets > self.until]
        serve_bytes(handler, request, data, etag=etag)


def test_a_file_rewritten_mid_way_is_stale(
    tmp_path: Path, parquet: bytes, parts_of_1mib: None
) -> None:
    answer = _Rewritten(parquet, until=2)
    with ScriptedServer(answer) as server:
        stream = ParquetStream(remote=server.url("/t.parquet"), local=str(tmp_path / "c"))
        ds = StreamingDataset(streams=[stream])
        with pytest.raises(StaleIndexError, match=r"t\.parquet row group 0: the file changed"):
            ds[0]
        assert answer.data_gets > answer.until  # parts of both versions were answered
    assert not os.path.exists(_local(ds, 0))
    assert not [p for p in (tmp_path / "c").rglob("*") if p.name.endswith(".tmp")]


def test_a_listing_etag_the_gets_do_not_carry_is_not_stale(
    tmp_path: Path, parquet: bytes, parts_of_1mib: None
) -> None:
    # A CDN's answers: HEAD gives one ETag, GETs another (and refuse If-Match the first).
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        etag = '"listing"' if request.method == "HEAD" else '"cdn"'
        serve_bytes(handler, request, parquet, etag=etag)

    with ScriptedServer(answer) as server:
        stream = ParquetStream(remote=server.url("/t.parquet"), local=str(tmp_path / "c"))
        ds = StreamingDataset(streams=[stream])
        assert ds[0] == _expected_rows(parquet)[0]
        refused = [r for r in server.requests if r.headers.get("if-match") == '"listing"']
    assert refused  # the footer's ETag was asked for first


class _Stalling:
    """Answers the footer's ranges; a row group's GETs get half their body, then silence."""

    def __init__(self, data: bytes) -> None:
        self.data, self.footer_at = data, len(data) - (32 << 10)  # the footer read: its last 32 KiB
        self.release = threading.Event()

    def __call__(self, request: Request, handler: BaseHTTPRequestHandler) -> None:
        found = re.match(r"bytes=(\d+)-(\d+)", request.headers.get("range", ""))
        if request.method == "HEAD" or not found or int(found[1]) >= self.footer_at:
            serve_bytes(handler, request, self.data, etag='"v1"')
            return
        first, last = int(found[1]), int(found[2])
        handler.send_response(206)
        handler.send_header("Content-Length", str(last + 1 - first))
        handler.send_header("Content-Range", f"bytes {first}-{last}/{len(self.data)}")
        handler.send_header("ETag", '"v1"')
        handler.end_headers()
        handler.wfile.write(self.data[first : first + (last + 1 - first) // 2])
        handler.wfile.flush()
        self.release.wait(60)
        handler.close_connection = True


@pytest.fixture
def stalling(parquet: bytes) -> Iterator[tuple[ScriptedServer, _Stalling]]:
    answer = _Stalling(parquet)
    server = ScriptedServer(answer)
    yield server, answer
    answer.release.set()
    server.close()


@pytest.mark.timeout(60)
def test_a_body_stalling_mid_way_times_out(
    tmp_path: Path, stalling: tuple[ScriptedServer, _Stalling], parts_of_1mib: None
) -> None:
    server, _ = stalling
    url = server.url("/t.parquet")
    stream = ParquetStream(
        remote=url, local=str(tmp_path / "c"), download_timeout=0.5, download_retry=2
    )
    ds = StreamingDataset(streams=[stream])
    with pytest.raises(DownloadTimeoutError, match=re.escape(url)):
        ds[0]
    assert not os.path.exists(_local(ds, 0))
    assert not [p for p in (tmp_path / "c").rglob("*") if p.name.endswith(".tmp")]


def test_small_chunks_share_a_get_only_across_a_small_gap() -> None:
    near = [(100, 10), (110 + GAP_BYTES, 10)]
    assert ranged_parts(near, MIB) == [(100, 20 + GAP_BYTES)]
    far = [(100, 10), (111 + GAP_BYTES, 10)]
    assert ranged_parts(far, MIB) == far
    assert ranged_parts([(0, 5 * MIB // 2)], MIB) == [(0, MIB), (MIB, MIB), (2 * MIB, MIB // 2)]
