"""The converter's table sources leave no Python object for Arrow's own threads to free: such
a free needs the GIL, and asked for while the interpreter finalizes it aborts the process at
exit (``tests/in_place/test_parquet_exit.py`` has the in-place reader's case). Parquet row
groups are read on the calling thread; CSV and Arrow IPC files are parsed from a copy in
Arrow's memory."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.local import LocalFileOpener

from streamx.convert.sources.tables import TableFormat, TableSource

# CSV over several of Arrow's 1 MiB blocks, so that its threads parse it.
_COLUMNS, _ROWS, _GROUP = 12, 40_000, 2_000

_CHILD = """
import sys
from streamx.convert import convert
result = convert(sys.argv[1], sys.argv[2], num_workers=1, progress=False)
"""


class _Tracked(bytes):
    """The bytes a source's fsspec file gave pyarrow, noting each thread that frees one."""

    freed_on: list[threading.Thread] = []

    def __del__(self) -> None:
        self.freed_on.append(threading.current_thread())


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same table as Parquet (row groups of ``_GROUP`` rows), CSV and Arrow IPC."""
    root = tmp_path_factory.mktemp("convert_exit")
    table = pa.table({f"c{i}": range(i, i + _ROWS) for i in range(_COLUMNS)})
    paths = {name: root / f"wide.{name}" for name in ("parquet", "csv", "arrow")}
    pq.write_table(table, paths["parquet"], row_group_size=_GROUP)
    pacsv.write_csv(table, paths["csv"])
    feather.write_feather(table, str(paths["arrow"]), compression="lz4")
    return paths


@pytest.mark.parametrize("fmt", ["parquet", "csv", "arrow"])
def test_arrow_threads_free_no_python_bytes(
    fmt: TableFormat, inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    read = LocalFileOpener.read
    monkeypatch.setattr(LocalFileOpener, "read", lambda self, *n: _Tracked(read(self, *n)))
    _Tracked.freed_on.clear()
    source = TableSource.open(str(inputs[fmt]), fmt)
    columns = source.columns({})
    rows = [row for part in source.parts() for _, row, _ in source.rows(part, columns)]
    assert rows == list(range(_ROWS))
    del source
    gc.collect()
    assert _Tracked.freed_on, "nothing was read through the fsspec file"
    # Arrow's threads run Python code as threading's dummy threads.
    arrow = [t for t in _Tracked.freed_on if isinstance(t, threading._DummyThread)]
    assert not arrow, f"{len(arrow)} of {len(_Tracked.freed_on)} reads freed on Arrow's threads"


def test_converting_processes_exit_cleanly(inputs: dict[str, Path], tmp_path: Path) -> None:
    def run(number: int) -> subprocess.CompletedProcess[str]:
        source = inputs[("parquet", "csv")[number % 2]]
        argv = [sys.executable, "-c", _CHILD, str(source), str(tmp_path / f"out-{number}")]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(run, range(4)))
    failed = [(p.returncode, p.stderr[-500:]) for p in done if p.returncode != 0]
    assert not failed, failed
