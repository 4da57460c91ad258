"""Reading a Parquet source in place leaves no Python object for Arrow's own threads to
free: such a free needs the GIL, and asked for while the interpreter finalizes it ends the
thread with ``pthread_exit``, which aborts the process at exit ("terminate called without
an active exception", SIGABRT) after its work is done."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamx import StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.format.parquet import remapped

_COLUMNS, _ROWS, _GROUP = 12, 2000, 50

# What the TTFS bench's child does, less ``import torch``: build, read sample 0, exit.
_CHILD = """
import faulthandler, sys
import streamx
faulthandler.enable()
stream = streamx.ParquetStream(remote=sys.argv[1], local=sys.argv[2])
dataset = streamx.StreamingDataset(streams=[stream], batch_size=8, shuffle=False)
assert int(dataset[0]["c0"]) == 0
"""


class _Tracked(bytes):
    """The bytes ``RemappedFile.read`` gave pyarrow, noting each thread that frees one."""

    freed_on: list[threading.Thread] = []

    def __del__(self) -> None:
        self.freed_on.append(threading.current_thread())


@pytest.fixture
def source(tmp_path: Path) -> str:
    """One file of ``_COLUMNS`` int columns and a bool one in row groups of ``_GROUP`` rows
    (the bool column: a type the core's page decoder leaves to pyarrow, so ``dataset[i]``
    decodes through ``RemappedFile``)."""
    columns = {f"c{i}": list(range(_ROWS)) for i in range(_COLUMNS)}
    table = pa.table({**columns, "flag": [i % 2 == 0 for i in range(_ROWS)]})
    pq.write_table(table, tmp_path / "wide.parquet", row_group_size=_GROUP)
    return str(tmp_path / "wide.parquet")


def test_arrow_threads_free_no_python_bytes(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = remapped.RemappedFile.read
    monkeypatch.setattr(remapped.RemappedFile, "read", lambda self, n=-1: _Tracked(read(self, n)))
    _Tracked.freed_on.clear()
    dataset = StreamingDataset(
        streams=[ParquetStream(remote=source, local=str(tmp_path / "cache"))],
        batch_size=8,
        shuffle=False,
    )
    assert [int(s["c0"]) for s in dataset] == list(range(_ROWS))
    del dataset
    assert _Tracked.freed_on, "no row group was decoded through RemappedFile"
    # Arrow's threads run Python code as threading's dummy threads.
    arrow = [t for t in _Tracked.freed_on if isinstance(t, threading._DummyThread)]
    assert not arrow, f"{len(arrow)} of {len(_Tracked.freed_on)} reads freed on Arrow's threads"


def test_processes_reading_a_sample_exit_cleanly(source: str, tmp_path: Path) -> None:
    def run(number: int) -> subprocess.CompletedProcess[str]:
        local = str(tmp_path / f"cache-{number}")
        argv = [sys.executable, "-c", _CHILD, source, local]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(run, range(8)))
    failed = [(p.returncode, p.stderr[-500:]) for p in done if p.returncode != 0]
    assert not failed, failed
