"""Peak memory (VmHWM) of each DataLoader worker over one pass of ``bench_in_place``'s
images repository read in place from local files (2 workers, batch 32): what the workers'
decoded row groups cost. Run it with each tree on ``PYTHONPATH`` in turn, the cache under
ROOT deleted between runs; the repository is written once (the first run)."""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import bench_in_place as base
import streamx
from streamx import ParquetStream, StreamingDataLoader, StreamingDataset


def _memory_kb(pid: int) -> Iterator[str]:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(("VmHWM", "VmRSS")):
                yield line.split()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path, help="where the repository and cache live")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument(
        "--per-sample", action="store_true", help="batched=False: torch's per-sample path"
    )
    args = parser.parse_args()
    root: Path = args.root
    if not (root / "datasets").exists():
        base.write_repo(root, "images", args.rows)
    shutil.rmtree(root / "cache", ignore_errors=True)
    data = root / "datasets" / "bench" / "images" / "data"
    streams = [
        ParquetStream(remote=str(p), local=str(root / "cache" / p.stem))
        for p in sorted(data.iterdir())
    ]
    ds = StreamingDataset(streams=streams, batch_size=32)
    # Persistent workers stay alive after the pass, so their peak can be read from /proc.
    loader = StreamingDataLoader(
        ds, batch_size=32, num_workers=2, persistent_workers=True, batched=not args.per_sample
    )
    began, rows = time.perf_counter(), 0
    for batch in loader:
        rows += len(batch["id"])
    me = os.getpid()
    with open(f"/proc/{me}/task/{me}/children") as children:
        workers = [int(p) for p in children.read().split()]
    print(streamx.__file__, "rows", rows, f"{time.perf_counter() - began:.1f} s")
    print("main VmHWM/VmRSS kB", list(_memory_kb(me)))
    for pid in workers:
        print("worker", pid, "VmHWM/VmRSS kB", list(_memory_kb(pid)))


if __name__ == "__main__":
    main()
