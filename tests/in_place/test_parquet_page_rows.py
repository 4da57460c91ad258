"""``dataset[i]`` on Parquet decodes the row group's pages in the core where it can
(:mod:`streamx.format.parquet.page_rows`): every row equals, value for value and type for
type, pyarrow's, for every covered type, encoding, codec and page version; anything else
is read by pyarrow (the same values); a malformed page is a ``CorruptShardError`` naming
the file, row group and column."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamx import StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.exceptions import CorruptShardError
from streamx.format.parquet import page_rows
from streamx.format.parquet.decoded_row_group import CACHE, DecodedRowGroup

ROWS, GROUP = 300, 128


def _covered() -> pa.Table:
    """A column of each covered Arrow type, with and without nulls, extremes included."""
    rng = np.random.default_rng(5)
    ids = np.arange(ROWS)
    columns: dict[str, Any] = {"id": pa.array(ids, pa.int64())}
    for kind in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        info = np.iinfo(kind)
        values = rng.integers(info.min, info.max, ROWS, dtype=kind, endpoint=True)
        values[:2] = (info.min, info.max)
        columns[kind] = pa.array(values)
        columns[f"{kind}_nulls"] = pa.array(values, mask=ids % 4 == 1)
    floats = rng.standard_normal(ROWS)
    floats[:4] = (math.inf, -math.inf, math.nan, -0.0)
    columns["float"] = pa.array(floats.astype(np.float32))
    columns["double"] = pa.array(floats)
    columns["double_nulls"] = pa.array(floats, mask=ids % 3 == 0)
    words = ["", "a", "δέλτα", "long " * 40, "\x00zero"]
    text = [f"{words[i % 5]}{i % 37}" for i in range(ROWS)]  # repeats: dictionaries
    columns["string"] = pa.array(text)
    columns["string_nulls"] = pa.array([None if i % 6 == 0 else t for i, t in enumerate(text)])
    columns["large_string"] = pa.array(text, pa.large_string())
    columns["binary"] = pa.array([bytes([i % 256]) * (i % 9) for i in range(ROWS)])
    columns["large_binary_nulls"] = pa.array(
        [None if i % 5 == 2 else bytes(i % 4) for i in range(ROWS)], pa.large_binary()
    )
    columns["all_null"] = pa.nulls(ROWS, pa.string())
    return pa.table(columns)


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (got, want)
    if isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    else:
        assert repr(got) == repr(want), (got, want)  # -0.0 and 0.0 differ


def _dataset(tmp_path: Path, table: pa.Table, **write: Any) -> StreamingDataset:
    path = tmp_path / "t.parquet"
    pq.write_table(table, str(path), row_group_size=GROUP, **write)
    return StreamingDataset(streams=[ParquetStream(remote=str(path), local=str(tmp_path / "c"))])


def _group() -> DecodedRowGroup:
    """The row group decoded last."""
    return CACHE.get(CACHE.keys()[-1], _never)


def _check_every_row(ds: StreamingDataset, table: pa.Table, paged: bool) -> None:
    want = table.to_pylist()
    order = np.random.default_rng(3).permutation(ROWS)
    kept = 0
    for i in order.tolist():
        row = ds[i]
        assert list(row) == table.column_names
        for name, value in want[i].items():
            _same(row[name], value)
        if CACHE.keys():  # (a row group read through is dropped)
            kept += 1
            assert (_group().pages is not None) == paged, i
    assert kept > ROWS // 2


WRITES = [
    {},
    {"compression": "zstd"},
    {"compression": "gzip"},
    {"compression": "none", "use_dictionary": False},
    {"data_page_version": "2.0"},
    {"data_page_version": "2.0", "compression": "zstd", "use_dictionary": False},
    {"data_page_size": 256},  # many pages per chunk
    {"dictionary_pagesize_limit": 64, "data_page_size": 128},  # a dictionary, then PLAIN
]


@pytest.mark.parametrize("write", WRITES, ids=lambda w: ",".join(f"{k}={v}" for k, v in w.items()))
def test_every_covered_type_equals_pyarrow(tmp_path: Path, write: dict[str, Any]) -> None:
    CACHE.clear()
    table = _covered()
    _check_every_row(_dataset(tmp_path, table, **write), table, paged=True)


def _distinct() -> pa.Table:
    """Distinct values (rows in dictionary order: no row map), one column with a null
    late in each row group (its later pages mapped), and one of repeats."""
    ids = np.arange(ROWS)
    floats = np.random.default_rng(9).random(ROWS)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "text": pa.array([f"row {i} " + "w" * (i % 50) for i in ids]),
            "double": pa.array(floats),
            "late_null": pa.array(floats, mask=ids % GROUP == GROUP - 3),
            "repeats": pa.array([f"r{(i * 7) % 11}" for i in ids]),
        }
    )


@pytest.mark.parametrize("write", [{}, {"data_page_size": 256}, {"data_page_version": "2.0"}])
def test_distinct_values_over_pages_and_row_groups_equal_pyarrow(
    tmp_path: Path, write: dict[str, Any]
) -> None:
    CACHE.clear()
    table = _distinct()
    _check_every_row(_dataset(tmp_path, table, **write), table, paged=True)


def test_a_projection_keeps_its_columns_in_the_order_asked(tmp_path: Path) -> None:
    CACHE.clear()
    table = _covered()
    path = tmp_path / "t.parquet"
    pq.write_table(table, str(path), row_group_size=GROUP)
    stream = ParquetStream(remote=str(path), local=str(tmp_path / "c"), columns=["string", "id"])
    row = StreamingDataset(streams=[stream])[7]
    assert row == {"id": 7, "string": table.column("string")[7].as_py()}
    assert list(row) == ["string", "id"] == _group().table.column_names  # as pyarrow's


OTHERS: dict[str, tuple[pa.Array, dict[str, Any]]] = {
    "bool": (pa.array([i % 3 == 0 for i in range(ROWS)]), {}),
    "timestamp": (pa.array(np.arange(ROWS), pa.timestamp("us", tz="UTC")), {}),
    "duration": (pa.array(np.arange(ROWS), pa.duration("ms")), {}),
    "date": (pa.array(np.arange(ROWS, dtype=np.int32), pa.date32()), {}),
    "decimal": (pa.array([i / 4 for i in range(ROWS)]).cast(pa.decimal128(9, 2)), {}),
    "dictionary": (pa.array([f"w{i % 3}" for i in range(ROWS)]).dictionary_encode(), {}),
    "half": (pa.array(np.arange(ROWS, dtype=np.float16)), {}),
    "list": (pa.array([[i, i] for i in range(ROWS)]), {}),
    "struct": (pa.array([{"a": i} for i in range(ROWS)]), {}),
    "lz4": (pa.array(np.arange(ROWS)), {"compression": "lz4"}),
    "delta": (
        pa.array(np.arange(ROWS)),
        {"use_dictionary": False, "column_encoding": {"x": "DELTA_BINARY_PACKED"}},
    ),
    "split": (
        pa.array(np.linspace(0, 1, ROWS)),
        {"use_dictionary": False, "column_encoding": {"x": "BYTE_STREAM_SPLIT"}},
    ),
}


@pytest.mark.parametrize("name", list(OTHERS))
def test_what_the_core_leaves_is_read_by_pyarrow(tmp_path: Path, name: str) -> None:
    CACHE.clear()
    array, write = OTHERS[name]
    table = pa.table({"id": pa.array(range(ROWS), pa.int64()), "x": array})
    ds = _dataset(tmp_path, table, **write)
    want = table.to_pylist()
    for i in (0, 1, 200, ROWS - 1):
        row = ds[i]
        assert _group().pages is None
        for column, value in want[i].items():
            got = row[column]
            if isinstance(value, list):  # lists: numpy arrays on the per-sample path
                got = got.tolist()
            assert got == value and type(got) is type(value), (column, got, value)


def test_the_batched_path_decodes_the_table_after_the_pages(tmp_path: Path) -> None:
    CACHE.clear()
    table = _covered()
    ds = _dataset(tmp_path, table)
    assert ds[3]["string"] == table.column("string")[3].as_py()
    group = _group()
    paged = group.nbytes
    assert group.pages is not None and paged > 0
    assert group.values("string")[3] == table.column("string")[3].as_py()
    assert group.nbytes > paged  # the table's bytes counted beside the pages'


def test_the_plans_kept_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page_rows, "_MAX_PLANS", 1)
    page_rows._PLANS.clear()
    CACHE.clear()
    for k in range(3):
        table = pa.table({"id": pa.array(range(k * 10, k * 10 + 10), pa.int64())})
        pq.write_table(table, str(tmp_path / f"p{k}.parquet"))
    ds = StreamingDataset(streams=[ParquetStream(remote=str(tmp_path), local=str(tmp_path / "c"))])
    assert [ds[i]["id"] for i in (25, 3, 17, 26)] == [25, 3, 17, 26]
    assert len(page_rows._PLANS) == 1


def _local_file(ds: StreamingDataset, shard: int) -> Path:
    info = ds.shards[shard]
    return Path(info.local_path(info.raw_data))


@pytest.mark.parametrize("where", ["header", "values"])
def test_a_malformed_page_names_the_file_row_group_and_column(tmp_path: Path, where: str) -> None:
    CACHE.clear()
    table = pa.table({"text": [f"row {i} " * 5 for i in range(ROWS)]})
    ds = _dataset(tmp_path, table, compression="snappy", use_dictionary=False)
    assert ds[GROUP + 1]["text"] == "row 129 " * 5  # row group 1 on local disk
    CACHE.clear()
    local = _local_file(ds, 1)  # the file itself: a local source is read in place
    start, length = ds.shards[1].extra["chunks"][0]
    before = local.stat()
    data = bytearray(local.read_bytes())
    if where == "header":
        data[start] = 0xFF  # the first page header's first field: no such Thrift type
    else:
        middle = start + length // 2
        data[middle : middle + 16] = b"\xff" * 16  # inside snappy data
    local.write_bytes(bytes(data))
    # Same size and mtime: the file passes its check, so its bytes reach the decoder.
    os.utime(local, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(
        CorruptShardError, match=r't\.parquet row group 1 does not decode \(column "text"'
    ):
        ds[GROUP + 2]


def _never() -> Any:
    raise AssertionError("the row group was not kept")


def test_a_span_past_the_end_of_a_file_read_in_place_is_named(tmp_path: Path) -> None:
    CACHE.clear()
    ds = _dataset(tmp_path, _distinct())
    shard = ds.shards[1]
    size = int(shard.extra["source_size"])
    (start, _length), *rest = shard.extra["chunks"]
    shard.extra["chunks"] = [(start, size - start + 10), *rest]  # as a bad footer could say
    with pytest.raises(CorruptShardError, match=r"t\.parquet row group 1: \d+ of its \d+ bytes"):
        ds[GROUP + 1]


def test_a_read_buffer_reads_spans_in_order_and_reports_a_short_one(tmp_path: Path) -> None:
    from streamx import _core

    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    buffer = _core.ReadBuffer()
    fd = os.open(path, os.O_RDONLY)
    try:
        assert buffer.read(fd, [(7, 3), (0, 2)], "f") is None
        assert len(buffer) == 5
        assert buffer.read(fd, [(0, 2), (8, 5)], "f") == (8, 5, 2)
    finally:
        os.close(fd)
    with pytest.raises(OSError, match="f"):
        buffer.read(fd, [(0, 1)], "f")  # closed
