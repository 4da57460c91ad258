"""An ``s3://`` file of an in-place source is looked at with one signed ``HEAD`` on the
downloader's own route: the size and version s3fs reports, without importing s3fs (0.9 s of
a first sample). Listings and globs still go through s3fs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lit_data import write_rows
from pq_data import write_parquet
from s3_bucket import S3  # tests/storage, on the path by conftest

from streamx.format.remote_files import RemoteFile, list_files, stat_file
from streamx.storage import filesystems

pytestmark = pytest.mark.remote


def test_size_and_version_are_s3fss(s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    url = s3.put("dir/a.bin", b"abc" * 1000)
    found = stat_file(url)
    fs, path = filesystems.get_filesystem(url)
    info = fs.info(path)
    assert found == RemoteFile(url, info["size"], info["ETag"])
    assert found.size == 3000 and found.version.startswith('"')
    monkeypatch.setenv("STREAMX_S3_DIRECT", "0")  # s3fs's answer, through the same function
    assert stat_file(url) == found


def test_a_missing_object_names_the_url_and_the_status(s3: S3) -> None:
    url = s3.url("no/such.parquet")
    with pytest.raises(FileNotFoundError, match=f"HEAD {url}: HTTP 404"):
        stat_file(url)
    with pytest.raises(FileNotFoundError, match=f"HEAD {url}: HTTP 404"):
        list_files(url)  # named as a Parquet source (s3fs's message was the bare path)


def test_a_glob_is_still_listed(s3: S3) -> None:
    s3.put("g/p0.parquet", b"x")
    s3.put("g/p1.parquet", b"yy")
    found = list_files(s3.url("g/p*.parquet"))
    assert [(f.url, f.size) for f in found] == [
        (s3.url("g/p0.parquet"), 1),
        (s3.url("g/p1.parquet"), 2),
    ]
    assert found == [stat_file(f.url) for f in found]


_FIRST_SAMPLE = """
import sys, streamx
kind, remote, local = sys.argv[1:]
cls = streamx.ParquetStream if kind == "parquet" else streamx.LitDataStream
stream = cls(remote=remote, local=local)
ds = streamx.StreamingDataset(streams=[stream], batch_size=2, shuffle=False)
print(len(ds), ds[7]["id"], "s3fs" in sys.modules)
"""


@pytest.mark.parametrize("kind", ["parquet", "litdata"])
def test_a_first_sample_imports_no_s3fs(s3: S3, tmp_path: Path, kind: str) -> None:
    """A real process reads one Parquet file, or a LitData dataset, from S3."""
    made = tmp_path / "made"
    if kind == "parquet":
        write_parquet(str(made / "t.parquet"), rows=20, group=5)
        remote = s3.url("t.parquet")
    else:
        write_rows(str(made), count=20, chunk_size=8)
        remote = s3.url("lit")
    for file in sorted(made.iterdir()):
        key = file.name if kind == "parquet" else f"lit/{file.name}"
        s3.put(key, file.read_bytes())
    run = subprocess.run(
        [sys.executable, "-c", _FIRST_SAMPLE, kind, remote, str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["20", "7", "False"]
