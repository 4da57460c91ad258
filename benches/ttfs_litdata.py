"""Single-process cold-cache time to the first sample of LitData's own chunks read in place
(``LitDataStream``), range reads on and off interleaved.

Each measurement is a fresh interpreter (torch and streamx imported before the clock) that
builds a ``StreamingDataset`` over ``s3://bucket/litdata-{img,tokens}`` served by nginx at
``limit_rate 40m`` from ``ROOT`` and times the build (the index download) and then
``next(iter(ds))`` apart. ``ROOT`` gets the datasets ``bench_objstore.py`` writes (1,000 img
and 10,000 tokens samples, chunks of 64 MiB) when it lacks them.

Usage: ``python benches/ttfs_litdata.py ROOT [REPEATS]``.
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

CODE = """
import sys, time, torch, streamx
t0 = time.perf_counter()
stream = streamx.LitDataStream(remote=sys.argv[1], local=sys.argv[2])
ds = streamx.StreamingDataset(streams=[stream], batch_size=32, shuffle=False)
t1 = time.perf_counter()
next(iter(ds))
print(t1 - t0, time.perf_counter() - t1)
"""
COUNTS = {"img": 1_000, "tokens": 10_000}


def _write(root: Path) -> None:
    from bench_objstore import write  # benches/, beside this file

    for workload, count in COUNTS.items():
        out = root / "bucket" / f"litdata-{workload}"
        if not (out / "index.json").exists():
            write({"lib": "litdata", "workload": workload, "count": count, "out": str(out)})


def _once(remote: str) -> tuple[float, float]:
    local = tempfile.mkdtemp()
    try:
        compile_streamx()
        out = subprocess.run(
            [sys.executable, "-c", CODE, remote, local],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
    finally:
        shutil.rmtree(local, ignore_errors=True)
    build, first = out.stdout.strip().splitlines()[-1].split()
    return float(build), float(first)


def main() -> None:
    root = Path(sys.argv[1])
    _write(root)
    os.environ.update(S3_BENCH_ENV)
    res: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with Nginx(root, limit_rate="40m") as server:
        os.environ["S3_ENDPOINT_URL"] = server.endpoint
        for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 4):
            for workload in COUNTS:
                for ranges in ("1", "0"):
                    os.environ["STREAMX_RANGE_READS"] = ranges
                    runs = res.setdefault((workload, ranges), [])
                    runs.append(_once(f"s3://bucket/litdata-{workload}"))
    for (workload, ranges), runs in sorted(res.items()):
        build = statistics.median(b for b, _ in runs)
        first = statistics.median(f for _, f in runs)
        shown = ", ".join(f"{f:.3f}" for _, f in runs)
        print(
            f"{workload} ranges={ranges}: build {build:.3f} s, then first sample median "
            f"{first:.3f} s ({shown})"
        )
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
