"""Time and bytes to ``dataset[i]`` of a row deep in a remote Parquet row group not yet
local, in a file with an offset index (``write_page_index=True``, as parquet-mr and Spark
write by default), over HTTPS capped at 40 MB/s per connection (``bench_in_place``'s nginx
server), in fresh processes that alternate this tree with another (``--before DIR``: a
python tree with its own extension).

Each run builds the dataset in a fresh cache, then times ``dataset[i]`` for the row ``--at``
of the way into row group 0, and counts the bytes and ranged GETs received until it
returns (``streamx.storage.accounting``).

Usage::

    PYTHONPATH=python .venv/bin/python benches/deep_row_parquet.py --rows 1000000 \\
        --group 500000 --at 0.9 --runs 5 --before /tmp/before/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_in_place as in_place
from common import compile_streamx

REPO_PYTHON = str(Path(__file__).resolve().parents[1] / "python")

CODE = """
import os, sys, time
import streamx
from streamx.storage import accounting
remote, local, at = sys.argv[1], sys.argv[2], float(sys.argv[3])
stream = streamx.ParquetStream(remote=remote, local=local)
ds = streamx.StreamingDataset(streams=[stream], shuffle=False)
group = sum(int(n) for _, n in ds.shards[0].extra["chunks"])
i = int(at * (ds.shards[0].samples - 1))
accounting.reset()
start = time.perf_counter()
row = ds[i]
got = time.perf_counter() - start
counts = accounting.totals()
assert row["id"] == i, row["id"]
print(round(got, 4), counts["bytes_received"], counts["RANGED_GET"], group, flush=True)
os._exit(0)  # not waiting for the row group's download the row started
"""


def _write(root: Path, rows: int, group: int, page_index: bool) -> Path:
    import pyarrow.parquet as pq

    folder = root / "data"
    folder.mkdir(parents=True)
    path = folder / "train.parquet"
    table = in_place._table("text", rows, 0)
    pq.write_table(table, path, row_group_size=group, write_page_index=page_index)
    return path


def _run(tree: str, remote: str, local: str, at: float) -> dict[str, float]:
    compile_streamx({"PYTHONPATH": tree})
    got = subprocess.run(
        [sys.executable, "-c", CODE, remote, local, str(at)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": tree},
        check=False,
    )
    if got.returncode != 0:
        raise RuntimeError(f"{tree} failed:\n{got.stderr[-2000:]}")
    seconds, received, ranged, group = got.stdout.split()
    return {"get_item_s": float(seconds), "bytes": int(received), "ranged_gets": int(ranged)} | {
        "row_group_bytes": int(group)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--group", type=int, default=500_000, help="rows per row group")
    parser.add_argument("--at", type=float, default=0.9, help="where the row lies, 0 to 1")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-page-index", action="store_true", help="a file without one")
    parser.add_argument("--before", help="another python tree to alternate with this one")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="deep-row-parquet-")) / "root"
    root.mkdir()
    _write(root, args.rows, args.group, not args.no_page_index)
    trees = {"after": REPO_PYTHON, **({"before": args.before} if args.before else {})}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with in_place._serving(root, "https-40m") as (endpoint, _):
        remote = f"{endpoint}/data/train.parquet"
        for run in range(args.runs):
            for name in sorted(trees, reverse=run % 2 == 1):  # alternate which goes first
                local = str(root.parent / f"cache-{name}-{run}")
                out = _run(trees[name], remote, local, args.at)
                results[name].append(out)
                print(json.dumps({"tree": name, "run": run, "at": args.at} | out), flush=True)
    for name, runs in results.items():
        times = sorted(r["get_item_s"] for r in runs)
        summary = {
            "tree": name,
            "median_s": statistics.median(times),
            "range_s": [times[0], times[-1]],
        }
        summary["median_bytes"] = statistics.median(r["bytes"] for r in runs)
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
