"""Resume at half a py1e epoch: ``claim_pass()`` to the worker's first piece, to its second
(the loader's look-ahead), and the loader's own path (``worker_batches``) from a claimed pass
to its first batch, with the count cache,
alternating two python trees (``--before DIR``: another tree with its own extension) in
fresh processes. Every run also reports the first ids and a checksum of both pieces, so a
change of order shows. The index is ``bench_scale.py``'s synthetic one (no shard data).

Usage::

    PYTHONPATH=python .venv/bin/python benches/bench_resume_pieces.py \\
        --worlds 8x8x2:7,8x8x2:0,1x8x2 --size 1e9 --runs 3 --before /tmp/before/python
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import bench_scale as scale
from common import run_worker, worker_main

SCRIPT = Path(__file__).resolve()
REPO_PYTHON = str(SCRIPT.parents[1] / "python")


def do_pieces(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    import streamx
    from streamx.dataset.iteration import _worker_pieces, worker_batches
    from streamx.order.world import World

    nodes, ranks, workers, node = scale._world(spec)
    world = World(nodes, ranks, node * ranks, workers, 0)

    def make() -> Any:
        ds = streamx.StreamingDataset(
            local=spec["local"],
            batch_size=scale.BATCH,
            shuffle=True,
            shuffle_seed=scale.SEED,
            num_canonical_nodes=nodes,
        )
        if spec["resume"]:
            state = {
                "epoch": 0,
                "sample_in_epoch": spec["n"] // 2,
                "num_canonical_nodes": nodes,
                "shuffle_seed": scale.SEED,
                "initial_physical_nodes": None,
            }
            ds.load_state_dict(state)
        return ds

    ds = make()
    start = time.perf_counter()
    claimed = ds.claim_pass()
    pieces = _worker_pieces(claimed.start, claimed.layout, world)
    first = next(pieces)
    one = time.perf_counter() - start
    second = next(pieces)
    two = time.perf_counter() - start
    ids = np.asarray(first[:4]).tolist()
    # The loader's own path to its first batch (ids only: the index has no shard data).
    again = make().claim_pass()  # a pass of its own: a claim uses the resumption up
    start = time.perf_counter()
    batches = worker_batches(
        again.start,
        again.layout,
        world,
        again.access,
        lambda part: part,
        batch_size=scale.BATCH,
        drop_last=False,
    )
    batch = next(batches)[0]
    loader = time.perf_counter() - start
    assert np.array_equal(batch, first[: scale.BATCH])
    return {
        "first": one,
        "two": two,
        "batch": loader,
        "ids": ids,
        "sum": int(first.sum() + second.sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", default="8x8x2:7,8x8x2:0,1x8x2")
    parser.add_argument("--size", default="1e9")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", help="another python tree to alternate with this one")
    parser.add_argument("--data", default="/tmp/py1e_scale")
    parser.add_argument("--quick", action="store_true", help="10^8 samples, one run")
    args = parser.parse_args()
    if args.quick:
        args.size, args.runs = "1e8", 1
    n = int(float(args.size))
    local = scale.write_index(Path(args.data) / f"n{n:.0e}", n).parent
    trees = {"after": REPO_PYTHON, **({"before": args.before} if args.before else {})}
    for world in args.worlds.split(","):
        spec = {"n": n, "world": world, "local": str(local), "resume": True}
        os.environ["PYTHONPATH"] = REPO_PYTHON
        warm = run_worker(SCRIPT, {**spec, "resume": False}, 900)  # writes the count cache
        print(json.dumps({"world": world, "warm_s": round(warm["first"], 3)}), flush=True)
        for run in range(args.runs):
            order = sorted(trees, reverse=run % 2 == 1)  # alternate which goes first
            for name in order:
                os.environ["PYTHONPATH"] = trees[name]
                got = run_worker(SCRIPT, spec, 900)
                row = {"world": world, "tree": name, "run": run}
                row |= {
                    "first_piece_s": round(got["first"], 4),
                    "two_pieces_s": round(got["two"], 4),
                }
                row |= {"loader_first_batch_s": round(got["batch"], 4)}
                row |= {"ids": got["ids"], "sum": got["sum"]}
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    if not worker_main(sys.argv[1:], do_pieces):
        main()
