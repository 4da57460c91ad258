"""Single-process cold-cache time to the first sample, range reads on and off interleaved.

Each measurement is a fresh interpreter (torch and streamx imported before the clock) that
builds a ``StreamingDataset`` over ``s3://bucket/mds-{img,tokens}`` served by nginx at
``limit_rate 40m`` from ``ROOT`` (the layout ``bench_objstore.py`` writes; pass it as the first
argument) and times ``next(iter(ds))``, the index download included.

Usage: ``python benches/ttfs_ranges.py ROOT [REPEATS]``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from nginx_server import Nginx

from common import S3_BENCH_ENV, compile_streamx

os.environ.update(S3_BENCH_ENV)
CODE = """
import time, streamx, sys, torch
from streamx.dataset import streaming
t0 = time.perf_counter()
ds = streamx.StreamingDataset(remote=sys.argv[1], local=sys.argv[2], batch_size=32)
it = iter(ds)
next(it)
print(time.perf_counter() - t0)
"""
res: dict[tuple[str, str], list[float]] = {}
with Nginx(sys.argv[1], limit_rate="40m") as server:
    os.environ["S3_ENDPOINT_URL"] = server.endpoint
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 4):
        for wl in ("img", "tokens"):
            for rr in ("1", "0"):
                os.environ["STREAMX_RANGE_READS"] = rr
                local = tempfile.mkdtemp()
                remote = f"s3://bucket/mds-{wl}"
                compile_streamx()
                out = subprocess.run(
                    [sys.executable, "-c", CODE, remote, local],
                    capture_output=True,
                    text=True,
                    timeout=120,
                    check=True,
                )
                res.setdefault((wl, rr), []).append(float(out.stdout.strip().splitlines()[-1]))
                shutil.rmtree(local, ignore_errors=True)
for (workload, ranges), seconds in sorted(res.items()):
    runs = ", ".join(f"{x:.3f}" for x in seconds)
    print(f"{workload} ranges={ranges}: median {statistics.median(seconds):.3f} s ({runs})")
print("load average", os.getloadavg())
