"""A remote Parquet row served before its row group has arrived: its column chunks' first
pages read by range (``format/parquet/early_rows.py``), against a scripted HTTP server that
sends the first half of every large range of the row group and then stalls."""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pq_data import text_rows_parquet
from scripted_http import Request, ScriptedServer, serve_bytes  # tests/storage, on the path

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset, _core
from streamx.exceptions import CorruptShardError
from streamx.format.parquet.chunks import ranged_parts

MIB = 1 << 20
ROWS = 16000  # one row group: about 5.6 MB of text


def _parquet(rows: int = ROWS, **options: Any) -> bytes:
    return text_rows_parquet(rows, 3, **options)


def _chunk_start(col: Any) -> int:
    start = int(col.data_page_offset)
    return min(start, int(col.dictionary_page_offset)) if col.has_dictionary_page else start


def _end(rg: Any) -> int:
    return max(
        _chunk_start(rg.column(j)) + int(rg.column(j).total_compressed_size)
        for j in range(rg.num_columns)
    )


class _Stalling:
    """Serves ``data``; a ranged GET of a part of the row group's download (its column
    chunks in parts of 1 MiB) gets its first half, then nothing until ``release``. Counts
    the body bytes it sent."""

    def __init__(self, data: bytes) -> None:
        self.data, self.footer_at = data, len(data) - (32 << 10)
        rg = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
        first = min(_chunk_start(rg.column(j)) for j in range(rg.num_columns))
        self.parts = set(ranged_parts([(first, _end(rg) - first)], MIB))
        self.release = threading.Event()
        self.sent: list[tuple[int, int, int]] = []  # (start, asked, sent) of each range
        self._lock = threading.Lock()

    def __call__(self, request: Request, handler: BaseHTTPRequestHandler) -> None:
        found = re.match(r"bytes=(\d+)-(\d+)", request.headers.get("range", ""))
        if request.method == "HEAD" or not found or int(found[1]) >= self.footer_at:
            serve_bytes(handler, request, self.data, etag='"v1"')
            return
        first, last = int(found[1]), int(found[2])
        length = last + 1 - first
        stall = (first, length) in self.parts and not self.release.is_set()
        body = self.data[first : first + (length // 2 if stall else length)]
        handler.send_response(206)
        handler.send_header("Content-Length", str(length))
        handler.send_header("Content-Range", f"bytes {first}-{last}/{len(self.data)}")
        handler.send_header("ETag", '"v1"')
        handler.end_headers()
        handler.wfile.write(body)
        handler.wfile.flush()
        with self._lock:
            self.sent.append((first, length, len(body)))
        if len(body) < length:
            self.release.wait(60)
            handler.close_connection = True

    def bytes_sent(self) -> int:
        with self._lock:
            return sum(n for _, _, n in self.sent)


@pytest.fixture
def stalling(tmp_path: Path) -> Iterator[tuple[ScriptedServer, _Stalling, bytes]]:
    data = _parquet()
    answer = _Stalling(data)
    server = ScriptedServer(answer)
    yield server, answer, data
    answer.release.set()
    server.close()


def _dataset(url: str, local: Path, **kwargs: Any) -> StreamingDataset:
    stream = ParquetStream(remote=url, local=str(local), download_timeout=30, download_retry=1)
    return StreamingDataset(streams=[stream], **kwargs)


def _expected(data: bytes) -> list[dict[str, Any]]:
    return list(pq.read_table(io.BytesIO(data)).to_pylist())


def _local(ds: StreamingDataset, shard: int) -> Path:
    info = ds.shards[shard]
    return Path(info.local_path(info.raw_data))


@pytest.mark.timeout(60)
def test_the_first_sample_comes_while_its_row_group_stalls(
    tmp_path: Path,
    stalling: tuple[ScriptedServer, _Stalling, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    server, answer, data = stalling
    ds = _dataset(server.url("/t.parquet"), tmp_path / "c", batch_size=4)
    group = sum(int(n) for _, n in ds.shards[0].extra["chunks"])
    assert group > 4 * MIB
    expected = _expected(data)
    first = next(iter(ds))  # starts the row group's download, whose parts stall half-way
    assert first == expected[0]
    # The download's parts are stalled, so the row came from the few pages read by range.
    assert not _local(ds, 0).exists()
    early = [n for start, asked, n in answer.sent if (start, asked) not in answer.parts]
    assert early and sum(early) < group // 2
    assert answer.bytes_sent() < group  # the row group's bytes have not all been sent


def test_random_rows_of_a_row_group_not_local_read_only_their_pages(
    tmp_path: Path, stalling: tuple[ScriptedServer, _Stalling, bytes]
) -> None:
    server, answer, data = stalling
    ds = _dataset(server.url("/t.parquet"), tmp_path / "c")
    expected = _expected(data)
    for i in (0, 5, 700, 1500, 40):
        assert ds[i] == expected[i]
    # The first row started the row group's download, as an MDS shard's range reads do; its
    # parts stall, and the rows came from the pages read by range.
    assert not _local(ds, 0).exists()
    group = sum(int(n) for _, n in ds.shards[0].extra["chunks"])
    early = [n for start, asked, n in answer.sent if (start, asked) not in answer.parts]
    assert sum(early) < group // 2


def test_a_row_past_the_budget_waits_for_its_row_group(
    tmp_path: Path, stalling: tuple[ScriptedServer, _Stalling, bytes]
) -> None:
    server, answer, data = stalling
    answer.release.set()  # nothing stalls: the whole row group arrives
    ds = _dataset(server.url("/t.parquet"), tmp_path / "c")
    assert ds[ROWS - 1] == _expected(data)[ROWS - 1]
    assert _local(ds, 0).exists()


def _corrupt_server(data: bytes) -> ScriptedServer:
    def answer(request: Request, handler: BaseHTTPRequestHandler) -> None:
        serve_bytes(handler, request, data, etag='"v1"')

    return ScriptedServer(answer)


def test_a_corrupt_first_page_is_named(tmp_path: Path) -> None:
    data = bytearray(_parquet())
    md = pq.ParquetFile(io.BytesIO(bytes(data))).metadata
    col = md.row_group(0).column(1)  # text: its dictionary page, then data pages
    start = int(col.dictionary_page_offset or col.data_page_offset)
    data[start : start + 8] = b"\xff" * 8  # the page header's first bytes
    with _corrupt_server(bytes(data)) as server:
        ds = _dataset(server.url("/t.parquet"), tmp_path / "c")
        named = r"t\.parquet row group 0 does not decode \(column 'text'"
        with pytest.raises(CorruptShardError, match=named):
            ds[0]


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
def test_whole_pages_of_a_prefix_count_the_rows_pyarrow_wrote(page_version: str) -> None:
    data = _parquet(rows=3000, data_page_version=page_version, compression="zstd")
    rg = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    for j in range(rg.num_columns):
        col = rg.column(j)
        start, length = _chunk_start(col), int(col.total_compressed_size)
        chunk = data[start : start + length]
        ends, rows, _ = _core.parquet_whole_pages(chunk, length)
        assert ends[-1] == length and rows[-1] == 3000
        for cut in (3, 100, 5000, length // 2, length - 1):
            cut_ends, cut_rows, _ = _core.parquet_whole_pages(chunk[:cut], length)
            assert cut_rows == rows[: len(cut_rows)]
            assert all(end <= cut for end in cut_ends)
        with pytest.raises(ValueError, match="a page of"):
            _core.parquet_whole_pages(chunk, length - 1)  # its last page runs past the chunk


@pytest.mark.timeout(60)
def test_a_first_batch_comes_from_early_rows_as_from_the_row_group(
    tmp_path: Path,
    stalling: tuple[ScriptedServer, _Stalling, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    server, _, data = stalling
    stream = ParquetStream(
        remote=server.url("/t.parquet"), local=str(tmp_path / "c"), columns=["id", "text"]
    )
    ds = StreamingDataset(streams=[stream], batch_size=8, shuffle=False)
    batch = next(iter(StreamingDataLoader(ds, batch_size=8, num_workers=0)))
    assert not _local(ds, 0).exists()  # the download stalls: the batch came from pages
    expected = _expected(data)[:8]
    assert batch["id"].tolist() == [row["id"] for row in expected]
    assert list(batch["text"]) == [row["text"] for row in expected]
