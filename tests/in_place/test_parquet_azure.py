"""Parquet read in place from ``azure://``: each named file looked at with one ``HEAD`` and
read by ranged GETs on the direct route (a SAS per blob, checked by the loopback Blob API
server), the same rows as the local files, and a rewritten blob refused, not mixed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pq_data import write_parquet

from azure_blob_server import ACCOUNT, BlobServer, connection_string
from streamx import StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.storage import filesystems

pytestmark = [pytest.mark.remote, pytest.mark.timeout(180)]

REMOTE = f"azure://{ACCOUNT}.blob.core.windows.net/data"


@pytest.fixture
def blobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlobServer]:
    server = BlobServer(tmp_path / "blobs").start()
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string(server.endpoint))
    filesystems.clear_cache()
    yield server
    server.stop()
    filesystems.clear_cache()


def _rows(ds: StreamingDataset) -> list[tuple[int, str, bytes]]:
    return [(int(s["id"]), str(s["text"]), bytes(s["blob"])) for s in ds]


def test_named_files_read_as_the_local_ones(blobs: BlobServer, tmp_path: Path) -> None:
    for n in range(3):
        write_parquet(str(blobs.root / "data" / "pq" / f"part-{n}.parquet"), 50, 20, start=50 * n)
    remote = ParquetStream(remote=f"{REMOTE}/pq/part-{{0..2}}.parquet", local=str(tmp_path / "c"))
    local = ParquetStream(remote=str(blobs.root / "data" / "pq"), local=str(tmp_path / "l"))
    got = _rows(StreamingDataset(streams=[remote], shuffle=True, batch_size=4, shuffle_seed=3))
    want = _rows(StreamingDataset(streams=[local], shuffle=True, batch_size=4, shuffle_seed=3))
    assert got == want and sorted(r[0] for r in got) == list(range(150))
    heads = [b for m, b, s, _ in blobs.log if m == "HEAD" and s == 200]
    assert set(heads) == {f"pq/part-{n}.parquet" for n in range(3)}  # stats, then checks
    assert any(m == "GET" and s == 206 for m, _, s, _ in blobs.log)  # footers, row groups
    assert not [entry for entry in blobs.log if entry[2] >= 400], blobs.log


def test_a_rewritten_blob_is_refused_not_mixed(blobs: BlobServer, tmp_path: Path) -> None:
    path = blobs.root / "data" / "chg" / "t.parquet"
    write_parquet(str(path), 40, 20)
    url = f"{REMOTE}/chg/t.parquet"
    ds = StreamingDataset(streams=[ParquetStream(remote=url, local=str(tmp_path / "c"))])
    write_parquet(str(path), 60, 20, start=1000)
    with pytest.raises(Exception, match=r"chg/t.parquet row group 0: the file changed"):
        ds[0]
    again = StreamingDataset(streams=[ParquetStream(remote=url, local=str(tmp_path / "c"))])
    assert again.num_samples == 60 and again[0]["id"] == 1000


def test_a_missing_blob_is_named(blobs: BlobServer, tmp_path: Path) -> None:
    url = f"{REMOTE}/no/such.parquet"
    with pytest.raises(FileNotFoundError, match=f"HEAD {url}: HTTP 404"):
        StreamingDataset(streams=[ParquetStream(remote=url, local=str(tmp_path / "c"))])


def test_a_first_sample_imports_no_fsspec_backend(blobs: BlobServer, tmp_path: Path) -> None:
    write_parquet(str(blobs.root / "data" / "one" / "t.parquet"), 30, 10)
    code = (
        "import sys, streamx\n"
        f"s = streamx.ParquetStream(remote='{REMOTE}/one/t.parquet', local=sys.argv[1])\n"
        "ds = streamx.StreamingDataset(streams=[s], batch_size=2, shuffle=False)\n"
        "print(len(ds), ds[7]['id'], 'adlfs' in sys.modules, 'fsspec' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.split() == ["30", "7", "False", "False"], out.stderr
