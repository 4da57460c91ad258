"""A ``ParquetStream`` over many local Parquet files (issue 23): the construction's seconds
with an empty cache directory (``cold``: every footer read from its file and parsed) and
again with the footers cached (``warm``), then the seconds to read one row of each file in
turn (``touch``: each file's first read needs its parsed footer), and the process's peak
resident size and its resident size after the touches. Fresh processes alternate this tree
with another (``--before DIR``: a python tree with its own extension); the clock starts
after ``import torch, pyarrow.parquet, streamx``.

Usage::

    PYTHONPATH=python nice .venv/bin/python benches/parquet_footers.py --files 400 \\
        --runs 3 --before /tmp/before/python
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import compile_streamx

REPO_PYTHON = str(Path(__file__).resolve().parents[1] / "python")

CODE = """
import json, resource, sys, time
import pyarrow.parquet, torch, streamx  # imported before the clock
source, local, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
start = time.perf_counter()
stream = streamx.ParquetStream(remote=source, local=local)
dataset = streamx.StreamingDataset(streams=[stream])
built = time.perf_counter()
for i in range(0, len(dataset), rows):
    assert dataset[i]["c0"] == i
touched = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
with open("/proc/self/statm") as f:
    now = int(f.read().split()[1]) * resource.getpagesize() >> 20
print(json.dumps({"build_s": built - start, "touch_s": touched - built, "peak_mb": peak,
                  "rss_mb": now}))
"""


def write_files(folder: Path, files: int, columns: int, groups: int, group: int) -> None:
    """``files`` files of ``columns`` int64 columns in ``groups`` row groups of ``group`` rows
    (page indexes written): footers of tens of KiB, as wide tables have."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    rows = groups * group
    for k in range(files):
        ids = pa.array(range(k * rows, (k + 1) * rows), pa.int64())
        table = pa.table({f"c{j}": ids for j in range(columns)})
        path = str(folder / f"part-{k:05d}.parquet")
        pq.write_table(table, path, row_group_size=group, write_page_index=True)


def run(tree: str, source: Path, local: Path, rows: int) -> dict[str, float]:
    compile_streamx({"PYTHONPATH": tree})
    got = subprocess.run(
        [sys.executable, "-c", CODE, str(source), str(local), str(rows)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": tree},
        check=False,
    )
    if got.returncode != 0:
        raise RuntimeError(f"{tree} failed:\n{got.stderr[-2000:]}")
    result: dict[str, float] = json.loads(got.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--columns", type=int, default=16)
    parser.add_argument("--groups", type=int, default=16, help="row groups per file")
    parser.add_argument("--group", type=int, default=64, help="rows per row group")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", help="another python tree to alternate with this one")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="parquet-footers-"))
    try:
        write_files(root / "src", args.files, args.columns, args.groups, args.group)
        trees = {"after": REPO_PYTHON, **({"before": args.before} if args.before else {})}
        for number in range(args.runs):
            for name in sorted(trees, reverse=number % 2 == 1):  # alternate which goes first
                local = root / f"cache-{name}-{number}"
                for phase in ("cold", "warm"):
                    got = run(trees[name], root / "src", local, args.groups * args.group)
                    row = {"tree": name, "run": number, "phase": phase, "files": args.files}
                    print(json.dumps(row | got), flush=True)
                shutil.rmtree(local)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
