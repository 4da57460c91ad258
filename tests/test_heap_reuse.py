"""Batches of large samples reuse the heap that the previous batch freed.

glibc trims its heap once 128 KiB at the top is free, so a batch of 100 KB ``bytes``
samples, allocated and freed whole, faulted its pages in again every batch. Once streamx has
decoded a large sample, the heap is kept (``STREAMX_KEEP_FREED_HEAP``). Page faults are
counted in a fresh interpreter: the number of faults, not a timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import streamx

# Reads the dataset one way, then counts the page faults of 40 batches of 32 samples of
# 100 KB made and freed, as a loader's consumer does.
_SCRIPT = """
import resource, sys
import streamx
ds = streamx.StreamingDataset(local=sys.argv[1], batch_size=32, shuffle=False)
if sys.argv[2] == "loader":
    for batch in streamx.StreamingDataLoader(ds, batch_size=32, num_workers=0):
        pass
elif sys.argv[2] == "sample":
    ds[0]
# In a thread of its own: its allocations come from a fresh arena, which nothing allocated
# while importing (torch, say) pins, so only the heap's trimming decides the faults.
faults = []
def consume():
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    for _ in range(40):
        batch = [b"x" * 100_000 for _ in range(32)]
        del batch
    faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
import threading
consumer = threading.Thread(target=consume)
consumer.start()
consumer.join()
print(faults[0])
"""

# 40 batches of 3.2 MB each faulted in again: about 460 faults each on Debian 12 (glibc
# 2.36) where the heap keeps nothing; once kept, the first batch's faults only.
_CHURN = 40 * 300
_KEPT = 2_000


def _faults(local: Path, how: str, **env: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(local), how],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
        timeout=120,
    )
    return int(out.stdout.strip().splitlines()[-1])


def _dataset(root: Path, size: int) -> Path:
    with streamx.MDSWriter(out=str(root), columns={"i": "int", "data": "bytes"}) as writer:
        for i in range(64):
            writer.write({"i": i, "data": bytes([i]) * size})
    return root


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _dataset(tmp_path_factory.mktemp("large"), 100_000)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="the heap thresholds are glibc's",
)
@pytest.mark.parametrize("how", ["loader", "sample"])
def test_the_heap_is_kept_once_large_samples_are_read(large: Path, how: str) -> None:
    assert _faults(large, "none") > _CHURN  # what a process that read nothing pays
    assert _faults(large, how) < _KEPT


def test_it_can_be_turned_off(large: Path) -> None:
    assert _faults(large, "loader", STREAMX_KEEP_FREED_HEAP="0") > _CHURN


def test_small_samples_leave_the_allocator_alone(tmp_path: Path) -> None:
    small = _dataset(tmp_path / "small", 1_000)
    assert _faults(small, "loader") > _CHURN
