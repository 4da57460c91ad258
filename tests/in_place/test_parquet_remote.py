"""Parquet read in place from a moto S3 server: footers and column chunks by range."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pq_data import table

from streamx import StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.storage import accounting

pytestmark = pytest.mark.remote


def _put_table(s3: Any, key: str, rows: int, start: int = 0, group: int = 20) -> int:
    buf = io.BytesIO()
    pq.write_table(table(rows, start), buf, row_group_size=group)
    s3.put(key, buf.getvalue())
    return len(buf.getvalue())


def _read_all(ds: StreamingDataset) -> list[dict[str, Any]]:
    return [ds[i] for i in range(ds.num_samples)]


def test_s3_glob_streams(s3: Any, tmp_path: Path) -> None:
    _put_table(s3, "data/a.parquet", 50)
    _put_table(s3, "data/b.parquet", 30, start=50)
    s3.put("data/readme.txt", b"not data")
    stream = ParquetStream(remote=s3.url("data/*.parquet"), local=str(tmp_path / "c"))
    ds = StreamingDataset(streams=[stream], shuffle=True, batch_size=4)
    assert ds.samples_per_shard.tolist() == [20, 20, 10, 20, 10]
    samples = list(ds)
    assert sorted(int(s["id"]) for s in samples) == list(range(80))
    assert all(s["text"] == f"row {s['id']}" for s in samples)


def test_projection_downloads_only_its_chunks(s3: Any, tmp_path: Path) -> None:
    size = _put_table(s3, "wide/t.parquet", 2000, group=500)
    totals = {}
    for name, columns in (("all", None), ("two", ["id", "w0"])):
        stream = ParquetStream(
            remote=s3.url("wide/t.parquet"), local=str(tmp_path / name), columns=columns
        )
        accounting.reset()
        ds = StreamingDataset(streams=[stream])
        rows = _read_all(ds)
        totals[name] = accounting.totals()["bytes_received"]
        assert [r["id"] for r in rows] == list(range(2000))
        assert set(rows[0]) == ({"id", "w0"} if columns else set(table(1).column_names))
    assert totals["all"] > 0.8 * size
    # Two narrow columns of eight: their chunks plus the footer, not the blobs and strings.
    assert totals["two"] < 0.25 * size


def test_changed_source_refused_not_mixed(s3: Any, tmp_path: Path) -> None:
    _put_table(s3, "chg/t.parquet", 40)
    stream = ParquetStream(remote=s3.url("chg/t.parquet"), local=str(tmp_path / "c"))
    ds = StreamingDataset(streams=[stream])
    _put_table(s3, "chg/t.parquet", 60, start=1000)
    with pytest.raises(Exception, match=r"chg/t.parquet row group 0: the file changed"):
        ds[0]
    again = StreamingDataset(
        streams=[ParquetStream(remote=s3.url("chg/t.parquet"), local=str(tmp_path / "c"))]
    )
    assert again.num_samples == 60 and again[0]["id"] == 1000
