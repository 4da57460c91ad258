"""A training run that only reads imports only what reading needs: fsspec when a filesystem
it serves is first used, the writers, uploads and the stream registry (catalogue) when asked
for. Each import is paid inside the run's time to first sample otherwise.

Each check runs in a fresh interpreter, since this test process has them loaded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import streamx


def _run(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _ten_ids(tmp_path: Path) -> str:
    """A local MDS dataset of ten ``id`` samples."""
    local = str(tmp_path / "ds")
    with streamx.MDSWriter(out=local, columns={"id": "int"}) as writer:
        for i in range(10):
            writer.write({"id": i})
    return local


def test_reading_a_dataset_imports_only_what_reading_needs(tmp_path: Path) -> None:
    local = _ten_ids(tmp_path)
    out = _run(
        f"""
import sys
import streamx
ds = streamx.StreamingDataset(local={local!r}, batch_size=2)
ids = [int(i) for b in streamx.StreamingDataLoader(ds, batch_size=2) for i in b["id"]]
print(ids == list(range(10)))
for name in ("fsspec", "catalogue", "streamx.format.writers", "streamx.storage.upload"):
    print(name in sys.modules)
"""
    )
    assert out == ["True", "False", "False", "False", "False"]


def test_the_lazy_names_are_the_modules_own() -> None:
    out = _run(
        """
import streamx, streamx.storage
from streamx.format.writers import MDSWriter
from streamx.storage.upload import Uploader
from streamx.dataset.registry import streams_registry
print(streamx.MDSWriter is MDSWriter, streamx.storage.Uploader is Uploader)
print(sorted(set(streamx.__all__) - set(dir(streamx))), "merge_index" in dir(streamx.storage))
"""
    )
    assert out == ["True", "True", "[]", "True"]


def test_a_scheme_served_by_fsspec_still_loads_it(tmp_path: Path) -> None:
    out = _run(
        f"""
import sys
from streamx.storage.filesystems import get_filesystem
fs, path = get_filesystem("file://{tmp_path}")
print(type(fs).__module__.startswith("fsspec"), 'fsspec' in sys.modules)
"""
    )
    assert out == ["True", "True"]


def test_a_parquet_dataset_imports_no_other_formats_reader(tmp_path: Path) -> None:
    """A Parquet-only dataset, built and read, never imports the tar, LitData or MDS
    readers: each format's modules load where a shard of that format is met."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": list(range(40))}), str(path), row_group_size=10)
    out = _run(
        f"""
import sys
import streamx
from streamx.dataset.parquet_stream import ParquetStream
stream = ParquetStream(remote={str(path)!r}, local={str(tmp_path / "cache")!r})
ds = streamx.StreamingDataset(streams=[stream], batch_size=4)
ids = [int(i) for b in streamx.StreamingDataLoader(ds, batch_size=4) for i in b["id"]]
print(sorted(ids) == list(range(40)), ds[3]["id"] == 3)
others = tuple(f"streamx.format.{{f}}" for f in ("webdataset", "litdata", "readers.mds"))
print(sorted(m for m in sys.modules if m.startswith(others)))
"""
    )
    assert out == ["True", "True", "[]"]


def test_an_mds_dataset_imports_no_other_formats_reader(tmp_path: Path) -> None:
    local = _ten_ids(tmp_path)
    out = _run(
        f"""
import sys
import streamx
ds = streamx.StreamingDataset(local={local!r}, batch_size=2)
print(sorted(int(s["id"]) for s in ds) == list(range(10)))
others = tuple(f"streamx.format.{{f}}" for f in ("webdataset", "litdata", "parquet"))
print(sorted(m for m in sys.modules if m.startswith(others)))
"""
    )
    assert out == ["True", "[]"]
