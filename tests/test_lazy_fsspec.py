"""fsspec is imported when a filesystem it serves is first used, not with streamx: the import
is paid inside every training run's time to first sample otherwise.

Each check runs in a fresh interpreter, since this test process may have fsspec loaded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _run(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_reading_a_dataset_does_not_import_fsspec(tmp_path: Path) -> None:
    local = str(tmp_path / "ds")
    out = _run(
        f"""
import sys
import streamx
with streamx.MDSWriter(out={local!r}, columns={{"id": "int"}}) as w:
    for i in range(10):
        w.write({{"id": i}})
ds = streamx.StreamingDataset(local={local!r}, batch_size=2)
ids = [int(b["id"][0]) for b in streamx.StreamingDataLoader(ds, batch_size=2)]
print(len(ids), 'fsspec' in sys.modules)
"""
    )
    assert out == ["5", "False"]


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
