"""Parquet files and WebDataset tars read in place from ``gs://`` (gcsfs against
gcp-storage-emulator on loopback): listing, footers and headers by range, whole tars."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pq_data import table
from wds_data import tar_bytes

from streamx import ParquetStream, StreamingDataset, WebDatasetStream
from streamx.storage.filesystems import get_filesystem

pytestmark = [pytest.mark.remote, pytest.mark.timeout(120)]


def _put(path: str, data: bytes) -> None:
    fs, _ = get_filesystem(f"gs://{path}")
    with fs.open(path, "wb") as f:
        f.write(data)


def test_parquet_and_tars_from_gcs(gcs_emulator: str, tmp_path: Path) -> None:
    fs, _ = get_filesystem("gs://inplace/x")
    fs.mkdir("inplace")
    buffer = io.BytesIO()
    pq.write_table(table(60), buffer, row_group_size=25)
    _put("inplace/pq/t.parquet", buffer.getvalue())
    _put("inplace/tars/a-0.tar", tar_bytes(range(0, 9)))
    _put("inplace/tars/a-1.tar", tar_bytes(range(9, 20)))
    streams = [
        ParquetStream(remote="gs://inplace/pq", local=str(tmp_path / "p"), columns=["id"]),
        WebDatasetStream(remote="gs://inplace/tars/*.tar", local=str(tmp_path / "w")),
    ]
    ds = StreamingDataset(streams=streams, shuffle=True, batch_size=4)
    assert ds.samples_per_shard.tolist() == [25, 25, 10, 9, 11]
    seen = [int(s["cls"]) + 1000 if "cls" in s else int(s["id"]) for s in ds]
    assert sorted(seen) == list(range(60)) + list(range(1000, 1020))
