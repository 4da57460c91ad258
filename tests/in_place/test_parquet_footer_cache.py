"""Each Parquet footer is parsed once per process, by the index build, and kept up to
``STREAMX_PARQUET_FOOTER_BYTES``; one sent out is read again from its cached file, never
fetched again (``format/parquet/footer_cache.py``)."""

from __future__ import annotations

import gc
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nginx_server import LogEntry, Nginx, find_nginx  # tests/storage, on the path by conftest

from streamx import ParquetStream, StreamingDataLoader, StreamingDataset
from streamx.format.parquet import index
from streamx.format.parquet.chunks import column_chunks
from streamx.format.parquet.decoded_cache import _ENTRY_BYTES
from streamx.format.parquet.footer import parse_footer
from streamx.format.parquet.footer_cache import KEPT, CachedFooter, footer_bytes_limit
from streamx.format.parquet.index import FOOTERS
from streamx.format.parquet.row_group import footer

GROUP = 10  # rows per row group
GROUPS = 2  # row groups per file


def _write(folder: Path, files: int) -> list[dict[str, Any]]:
    """``files`` Parquet files of distinct rows; returns every row, in the files' order."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(files):
        ids = list(range(k * GROUP * GROUPS, (k + 1) * GROUP * GROUPS))
        table = pa.table({"id": ids, "text": [f"file {k} row {i}" for i in ids]})
        pq.write_table(table, str(folder / f"f{k:03d}.parquet"), row_group_size=GROUP)
        rows += table.to_pylist()
    return rows


def _dataset(remote: str, local: Path) -> StreamingDataset:
    stream = ParquetStream(remote=remote, local=str(local), download_timeout=30, download_retry=1)
    return StreamingDataset(streams=[stream])


def test_the_index_builds_parse_serves_the_reads(tmp_path: Path) -> None:
    # The footers parsed by the build are the ones the reads use: their cached files,
    # deleted once the dataset is made, are never opened (one parse per footer).
    rows = _write(tmp_path / "src", 4)
    ds = _dataset(str(tmp_path / "src"), tmp_path / "c")
    footers = list((tmp_path / "c").rglob("*.footer"))
    assert len(footers) == 4
    for path in footers:
        path.unlink()
    assert [ds[i] for i in range(0, len(rows), GROUP // 2)] == rows[:: GROUP // 2]
    first, second = ds.shards[0], ds.shards[1]  # one file's two row groups
    assert first.extra["source"] == second.extra["source"]
    assert footer(first)[1] is footer(second)[1]


def test_forked_workers_start_with_the_parents_footers(tmp_path: Path) -> None:
    # DataLoader workers forked after the build read with its parsed footers: the cached
    # files, deleted before the workers start, are never opened (spawned ones would read
    # them, once each).
    rows = _write(tmp_path / "src", 4)
    stream = ParquetStream(remote=str(tmp_path / "src"), local=str(tmp_path / "c"))
    ds = StreamingDataset(streams=[stream], batch_size=8)
    for path in (tmp_path / "c").rglob("*.footer"):
        path.unlink()
    loader = StreamingDataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context="fork")
    seen = sorted(int(i) for batch in loader for i in batch["id"])
    assert seen == [row["id"] for row in rows]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Nginx]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    (tmp_path / "served").mkdir()
    with Nginx(tmp_path / "served") as server:
        yield server


def _charge(path: Path) -> int:
    """What the cache charges for the file's footer."""
    data = path.read_bytes()
    (length,) = struct.unpack("<I", data[-8:-4])
    md = parse_footer(data, path.name)
    return CachedFooter(md, data[-8 - length : -8]).nbytes + _ENTRY_BYTES


def _footer_reads(log: list[LogEntry], served: Path) -> int:
    """The requests for a file's last bytes: its footer."""
    sizes = {p.name: p.stat().st_size for p in served.iterdir()}
    ends = {f"/{name}": size - 1 for name, size in sizes.items()}
    return sum(1 for e in log if e.range.endswith(f"-{ends.get(e.uri, -2)}"))


def _bound_to(footers: int, folder: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Bounds the footer cache (emptied) to ``footers`` of the largest in ``folder``;
    returns the bound."""
    bound = footers * max(_charge(p) for p in folder.iterdir())
    monkeypatch.setenv("STREAMX_PARQUET_FOOTER_BYTES", str(bound))
    monkeypatch.setattr(KEPT, "_limit", None)  # read from the environment again
    KEPT.clear()
    return bound


def test_the_footers_kept_stay_within_the_bound_and_evicted_ones_are_read_again(
    served: Nginx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = 24
    rows = _write(tmp_path / "served", files)
    bound = _bound_to(4, tmp_path / "served", monkeypatch)
    remote = f"{served.endpoint}/f{{000..{files - 1:03d}}}.parquet"  # no listing over HTTP
    ds = _dataset(remote, tmp_path / "c")
    assert KEPT.total <= bound and 1 <= len(KEPT.keys()) <= 4
    first = os.path.join(tmp_path / "c", FOOTERS, str(ds.shards[0].extra["footer"]))
    for _ in range(2):  # the second pass reads every footer again, evicted since
        assert first not in set(KEPT.keys())
        for k in range(files):
            i = (k * GROUPS + 1) * GROUP + k % GROUP  # a row of the file's second group
            assert ds[i] == rows[i]
            assert KEPT.total <= bound
    assert 1 <= len(KEPT.keys()) <= 4
    assert _footer_reads(served.log(), tmp_path / "served") == files  # the build's, only
    # An evicted footer is read from its cached file: gone, its file is named.
    assert first not in set(KEPT.keys())
    os.unlink(first)
    with pytest.raises(FileNotFoundError, match=r"f000\.parquet: its cached footer"):
        ds[0]


def test_the_index_build_holds_few_footers_whatever_the_file_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The build keeps each file's schema only, and lays out the row groups one file at a
    # time from the bounded cache: the parsed footers alive at once stay within the bound
    # (two here) plus the one in hand, not one per file. Counted without a collection: a
    # footer in a reference cycle would stay until the cyclic collector happens to run.
    files = 30
    rows = _write(tmp_path / "src", files)
    _bound_to(2, tmp_path / "src", monkeypatch)
    alive: list[int] = []
    lay_out = column_chunks

    def counted(md: Any, number: int, names: set[str], file: Any) -> Any:
        if number == 0:  # once a file
            alive.append(sum(type(o) is pq.FileMetaData for o in gc.get_objects()))
        return lay_out(md, number, names, file)

    monkeypatch.setattr(index, "column_chunks", counted)
    gc.collect()  # garbage of this test's own
    ds = _dataset(str(tmp_path / "src"), tmp_path / "c")
    assert len(alive) == files
    assert max(alive) <= 3, alive
    assert [ds[i] for i in range(0, len(rows), 7)] == rows[::7]
    # Reading parses the footers sent out again, none of them kept past the bound.
    assert sum(type(o) is pq.FileMetaData for o in gc.get_objects()) <= 3


def test_the_footer_bound_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_PARQUET_FOOTER_BYTES", "3mb")
    assert footer_bytes_limit() == 3 << 20
    monkeypatch.setenv("STREAMX_PARQUET_FOOTER_BYTES", "lots")
    with pytest.raises(ValueError, match="STREAMX_PARQUET_FOOTER_BYTES.*'256mb'.*'lots'"):
        footer_bytes_limit()
    monkeypatch.delenv("STREAMX_PARQUET_FOOTER_BYTES")
    assert footer_bytes_limit() == 256 << 20
