"""Constructing a dataset over a warm cache: every shard of the index already in `local`.

Each (library, shard count) is timed in a fresh interpreter: ``StreamingDataset(remote=...,
local=..., batch_size=4)`` over a local remote and a cache holding every shard (one-sample
shards, copies of one file; see tests/hardening/warm_cache.py). streamx once listed the
cache directory once per shard here (8,001 shards: 71.9 s).

    cd benches && PYTHONPATH=../python ../.venv/bin/python bench_warm_cache.py --shards 10000 100000

``--quick``: 500 shards only (seconds), a smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "hardening"))

_CHILD = """
import json, sys, time
remote, local, lib = sys.argv[1:4]
if lib == "streamx":
    import streamx as mod
else:
    import streaming as mod
    from streaming.base.util import clean_stale_shared_memory
    clean_stale_shared_memory()
cls = mod.StreamingDataset  # streamx imports it lazily: outside the timer, as mosaic's
start = time.perf_counter()
cpu = time.process_time()
ds = cls(remote=remote, local=local, batch_size=4)
print(json.dumps({"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu,
                  "shards": ds.num_shards}))
"""


def _time(lib: str, remote: str, local: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, remote, local, lib],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--quick", action="store_true", help="500 shards only: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.shards = [500]
    from warm_cache import make_warm

    print("| library | shards | wall s | CPU s | wall vs streaming |")
    print("|---|---:|---:|---:|---:|")
    for shards in args.shards:
        rows = {}
        for lib in ("streamx", "streaming"):
            with tempfile.TemporaryDirectory() as tmp:
                remote, local = make_warm(Path(tmp), shards)
                rows[lib] = _time(lib, remote, local)
                assert rows[lib]["shards"] == shards
        for lib, row in rows.items():
            ratio = rows["streaming"]["wall"] / row["wall"]
            print(f"| {lib} | {shards:,} | {row['wall']:.2f} | {row['cpu']:.2f} | {ratio:.1f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
