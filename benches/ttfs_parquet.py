"""Time to the first batch of a ``ParquetStream`` over HTTPS capped at 40 MB/s per
connection (``bench_in_place``'s repository and nginx server), in fresh processes that
alternate this tree with another (``--before DIR``: a python tree with its own extension).
Each run prints the construction's seconds, the first batch's, and their sum, from just
after ``import torch, streamx`` (streamx's own modules load lazily inside the clock).

Usage::

    PYTHONPATH=python .venv/bin/python benches/ttfs_parquet.py --case text --rows 1000000 \\
        --runs 4 --before /tmp/before/python [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_in_place as in_place
from common import compile_streamx

REPO_PYTHON = str(Path(__file__).resolve().parents[1] / "python")

CODE = """
import sys, time
import torch, streamx
start = time.perf_counter()
stream = streamx.ParquetStream(remote=sys.argv[1], local=sys.argv[2])
dataset = streamx.StreamingDataset(streams=[stream], batch_size=32, shuffle=False)
built = time.perf_counter()
workers = int(sys.argv[3])
batch = next(iter(streamx.StreamingDataLoader(dataset, batch_size=32, num_workers=workers)))
first = time.perf_counter()
assert batch["id"].tolist() == list(range(32))
print(round(built - start, 3), round(first - built, 3), round(first - start, 3))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="text", choices=["text", "images", "numeric"])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--before", help="another python tree to alternate with this one")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ttfs-parquet-")) / "root"
    root.mkdir()
    in_place.write_repo(root, args.case, args.rows)
    trees = {"after": REPO_PYTHON, **({"before": args.before} if args.before else {})}
    files = f"train-{{00000..{in_place.FILES - 1:05d}}}-of-{in_place.FILES:05d}.parquet"
    with in_place._serving(root, "https-40m") as (endpoint, _sent):
        remote = f"{endpoint}/datasets/bench/{args.case}/data/{files}"
        for run in range(args.runs):
            for name in sorted(trees, reverse=run % 2 == 1):  # alternate which goes first
                local = str(root.parent / f"cache-{name}-{run}")
                compile_streamx({"PYTHONPATH": trees[name]})
                got = subprocess.run(
                    [sys.executable, "-c", CODE, remote, local, str(args.workers)],
                    capture_output=True,
                    text=True,
                    timeout=600,
                    env={**os.environ, "PYTHONPATH": trees[name]},
                    check=False,
                )
                if got.returncode != 0:
                    raise RuntimeError(f"{name} run {run} failed:\n{got.stderr[-2000:]}")
                build, first, total = (float(x) for x in got.stdout.split())
                row = {"case": args.case, "tree": name, "run": run, "workers": args.workers}
                row |= {"build_s": build, "first_batch_s": first, "ttfs_s": total}
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
