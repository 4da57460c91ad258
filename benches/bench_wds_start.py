"""The start of a WebDataset stream on local tars: building the dataset (listing the tars,
reading each one's member table) and its first sample, for one or more streamx trees
side by side.

The script writes ``--samples`` samples in tars of ``--shard`` (``bench_wds_batched``'s
``labels`` case: four members a sample) once, then, for ``--runs`` rounds, each tree in
turn (``--trees``: ``python`` directories, each with its own extension; default the
installed streamx) starts twice in fresh interpreters (torch imported before the clock):
``cold`` with an empty cache directory, then ``warm`` with the same directory again (the
member tables and the first tar cached). Alternating the trees within each round keeps a
shared machine's load changes out of the comparison.

Usage: ``nice python benches/bench_wds_start.py [--trees BEFORE/python AFTER/python]
[--samples N] [--shard N] [--runs N] [--quick]`` (``--quick``: 2,000 samples in tars of 512, one
round: a smoke run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_wds_batched import write
from common import format_table, run_worker, worker_main

SCRIPT = Path(__file__).resolve()


def start(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401  (a loader imports it first; kept off the clock)

    import streamx
    import streamx.dataset.streaming  # its imports (torch's bases) off the clock too

    began = time.perf_counter()
    stream = streamx.WebDatasetStream(remote=spec["folder"], local=spec["local"])
    ds = streamx.StreamingDataset(streams=[stream], batch_size=32, shuffle=False)
    built = time.perf_counter()
    sample = next(iter(ds))
    done = time.perf_counter()
    return {
        "build_s": built - began,
        "first_s": done - built,
        "ttfs": done - began,
        "correct": int(sample["cls"]) == 0 and ds.num_samples == spec["samples"],
        "streamx": os.path.dirname(streamx.__file__),  # which tree was imported
    }


def _start(tree: str | None, spec: dict[str, Any]) -> dict[str, Any]:
    saved = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = tree
    try:
        return run_worker(SCRIPT, spec, timeout=600)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def bench(root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    folder = root / "tars"
    write(folder, "labels", args.samples, args.shard, 0)
    rows = []
    for run in range(1, args.runs + 1):
        for tree in args.trees or [None]:
            cache = Path(tempfile.mkdtemp(prefix="cache-", dir=root))
            spec = {"folder": str(folder), "local": str(cache / "c"), "samples": args.samples}
            row: dict[str, Any] = {"run": run, "tree": tree or "installed"}
            for phase in ("cold", "warm"):
                result = _start(tree, spec)
                for name in ("build_s", "first_s", "ttfs"):
                    row[f"{phase}_{name}"] = result[name]
                row["correct"] = row.get("correct", True) and result["correct"]
                row["imported"] = result["streamx"]
            shutil.rmtree(cache, ignore_errors=True)
            print(row, flush=True)
            rows.append(row)
    return rows


COLUMNS = [
    ("run", "run", "d"),
    ("tree", "tree", ""),
    ("cold_build_s", "cold build s", ".2f"),
    ("cold_first_s", "cold first sample s", ".2f"),
    ("cold_ttfs", "cold TTFS s", ".2f"),
    ("warm_build_s", "warm build s", ".2f"),
    ("warm_ttfs", "warm TTFS s", ".2f"),
    ("correct", "correct", ""),
]


def main(argv: list[str]) -> int:
    if worker_main(argv, start):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trees", nargs="*", default=[], help="python dirs, alternated")
    parser.add_argument("--samples", type=int, default=40_000)
    parser.add_argument("--shard", type=int, default=4096, help="samples per tar")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2,000 samples, one round")
    args = parser.parse_args(argv)
    if args.quick:
        args.samples, args.shard, args.runs = 2000, 512, 1
    root = Path(tempfile.mkdtemp(prefix="bench-wds-start-"))
    try:
        rows = bench(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(format_table(rows, COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
