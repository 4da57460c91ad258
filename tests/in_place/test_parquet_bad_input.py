"""Bad Parquet input: a clear error naming the file (and row group, or both files)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pq_data import write_parquet

from streamx import StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.exceptions import CorruptShardError


def _open(
    remote: Path,
    local: Path,
    *,
    columns: Sequence[str] | None = None,
    allow_schema_drift: bool = False,
) -> StreamingDataset:
    stream = ParquetStream(
        remote=str(remote),
        local=str(local),
        columns=columns,
        allow_schema_drift=allow_schema_drift,
    )
    return StreamingDataset(streams=[stream])


def test_not_parquet(tmp_path: Path) -> None:
    bad = tmp_path / "d" / "x.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"id,text\n" * 100)
    with pytest.raises(CorruptShardError, match=r"x\.parquet is not a Parquet file"):
        _open(bad, tmp_path / "c")


def test_truncated_footer(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    write_parquet(str(path), 50, 10)
    data = path.read_bytes()
    # The last 8 bytes kept (length and magic), the footer itself cut short.
    path.write_bytes(data[:100] + data[-8:])
    with pytest.raises(CorruptShardError, match=r"t\.parquet: truncated Parquet footer"):
        _open(path, tmp_path / "c")


def test_footer_garbled(tmp_path: Path) -> None:
    path = tmp_path / "g.parquet"
    write_parquet(str(path), 50, 10)
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[-8:-4], "little")
    data[-8 - length : -8] = b"\xff" * length
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptShardError, match=r"g\.parquet: the Parquet footer does not parse"):
        _open(path, tmp_path / "c")


def test_schema_differs_between_files(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    write_parquet(str(folder / "a.parquet"), 20, 10)
    pq.write_table(pa.table({"id": ["x"] * 5, "text": ["y"] * 5}), str(folder / "b.parquet"))
    with pytest.raises(ValueError, match=r"a\.parquet and .*b\.parquet: column 'id'"):
        _open(folder, tmp_path / "c", columns=["id", "text"])


def test_missing_column(tmp_path: Path) -> None:
    write_parquet(str(tmp_path / "a.parquet"), 20, 10)
    with pytest.raises(ValueError, match=r"a\.parquet has no column 'nope'"):
        _open(tmp_path / "a.parquet", tmp_path / "c", columns=["id", "nope"])


def test_no_parquet_file(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="No Parquet file found"):
        _open(tmp_path / "empty", tmp_path / "c")


def test_row_group_bytes_changed(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_parquet(str(path), 40, 10)
    ds = _open(path, tmp_path / "c", columns=["text"])
    data = bytearray(path.read_bytes())
    chunk = pq.read_metadata(str(path)).row_group(2).column(1)
    start = chunk.data_page_offset
    data[start : start + chunk.total_compressed_size] = b"\x07" * chunk.total_compressed_size
    path.write_bytes(bytes(data))  # same size; the version (mtime) may or may not differ
    with pytest.raises((CorruptShardError, ValueError), match=r"r\.parquet row group 2"):
        ds[25]


def test_schema_drift_unified_when_allowed(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(pa.table({"id": pa.array([0, 1], pa.int32())}), str(folder / "a.parquet"))
    pq.write_table(
        pa.table({"id": pa.array([2, 3], pa.int64()), "extra": ["x", "y"]}),
        str(folder / "b.parquet"),
    )
    with pytest.raises(ValueError, match=r"a\.parquet and .*b\.parquet: column 'id'"):
        _open(folder, tmp_path / "c")
    ds = _open(folder, tmp_path / "c2", allow_schema_drift=True)
    assert [ds[i] for i in range(4)] == [
        {"id": 0, "extra": None},
        {"id": 1, "extra": None},
        {"id": 2, "extra": "x"},
        {"id": 3, "extra": "y"},
    ]


def test_extra_column_in_second_file(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(pa.table({"id": [0, 1]}), str(folder / "a.parquet"))
    pq.write_table(pa.table({"id": [2, 3], "more": [1.0, 2.0]}), str(folder / "b.parquet"))
    with pytest.raises(ValueError, match=r"b\.parquet: column 'more' is missing in the first"):
        _open(folder, tmp_path / "c")


def test_without_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"needs pyarrow: pip install 'streamx-data\[convert\]'"):
        ParquetStream(remote=str(tmp_path / "a.parquet"))


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="`columns` must be a non-empty list"):
        ParquetStream(remote=str(tmp_path), columns="id")
    with pytest.raises(ValueError, match="`validate_hash` does not apply"):
        ParquetStream(remote=str(tmp_path), validate_hash="sha1")
