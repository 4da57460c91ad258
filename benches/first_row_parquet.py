"""Time to one row of a remote Parquet row group not yet local: ``dataset[i]`` (random
access) and the first sample of a pass without a loader, over HTTPS capped at 40 MB/s per
connection (``bench_in_place``'s repository and nginx server), in fresh processes that
alternate this tree with another (``--before DIR``: a python tree with its own extension).

Each run builds the dataset, then times ``dataset[i]`` for a row ``--at`` of the way into
row group 0 (a fresh cache: the row group is not local), then, in a second fresh cache, the
first sample of ``iter(dataset)`` (unshuffled: row 0). It prints both and the row group's
read bytes.

Usage::

    PYTHONPATH=python .venv/bin/python benches/first_row_parquet.py --case text \\
        --rows 4000000 --group 1000000 --runs 4 --before /tmp/before/python
    PYTHONPATH=python .venv/bin/python benches/first_row_parquet.py --case images \
        --rows 2048 --group 512 --at 0.3 --runs 4 --before /tmp/before/python
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
import streamx
remote, local, at = sys.argv[1], sys.argv[2], float(sys.argv[3])
def dataset(where):
    stream = streamx.ParquetStream(remote=remote, local=where)
    return streamx.StreamingDataset(streams=[stream], batch_size=32, shuffle=False)
ds = dataset(local + "-a")
group = sum(int(n) for _, n in ds.shards[0].extra["chunks"])
i = int(at * (ds.shards[0].samples - 1))
start = time.perf_counter()
row = ds[i]
got = time.perf_counter() - start
assert row["id"] == i, row["id"]
ds = dataset(local + "-b")
start = time.perf_counter()
first = next(iter(ds))
first_s = time.perf_counter() - start
assert first["id"] == 0
print(round(got, 4), round(first_s, 4), group)
"""


def _write_repo(root: Path, name: str, rows: int, group: int) -> None:
    """``bench_in_place``'s repository ``bench/NAME``, its files in row groups of ``group``
    rows (pyarrow's default is a million)."""
    import pyarrow.parquet as pq

    folder = root / "datasets" / "bench" / name / "data"
    folder.mkdir(parents=True)
    per = -(-rows // in_place.FILES)
    for number in range(in_place.FILES):
        start, count = number * per, min(per, rows - number * per)
        path = folder / f"train-{number:05d}-of-{in_place.FILES:05d}.parquet"
        pq.write_table(in_place._table(name, count, start), path, row_group_size=group)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="text", choices=["text", "images", "numeric"])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--at", type=float, default=0.01, help="where the row lies, 0 to 1")
    parser.add_argument("--group", type=int, default=64, help="rows per row group")
    parser.add_argument("--before", help="another python tree to alternate with this one")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="first-row-parquet-")) / "root"
    root.mkdir()
    _write_repo(root, args.case, args.rows, args.group)
    trees = {"after": REPO_PYTHON, **({"before": args.before} if args.before else {})}
    files = f"train-{{00000..{in_place.FILES - 1:05d}}}-of-{in_place.FILES:05d}.parquet"
    with in_place._serving(root, "https-40m") as (endpoint, _sent):
        remote = f"{endpoint}/datasets/bench/{args.case}/data/{files}"
        for run in range(args.runs):
            for name in sorted(trees, reverse=run % 2 == 1):  # alternate which goes first
                local = str(root.parent / f"cache-{name}-{run}")
                compile_streamx({"PYTHONPATH": trees[name]})
                got = subprocess.run(
                    [sys.executable, "-c", CODE, remote, local, str(args.at)],
                    capture_output=True,
                    text=True,
                    timeout=600,
                    env={**os.environ, "PYTHONPATH": trees[name]},
                    check=False,
                )
                if got.returncode != 0:
                    raise RuntimeError(f"{name} run {run} failed:\n{got.stderr[-2000:]}")
                row_s, first_s, group = got.stdout.split()
                out = {"case": args.case, "tree": name, "run": run, "at": args.at}
                out |= {"get_item_s": float(row_s), "first_sample_s": float(first_s)}
                print(json.dumps(out | {"row_group_bytes": int(group)}), flush=True)


if __name__ == "__main__":
    main()
