"""Scale (issue 24): dataset construction plus one worker's first batch at 10^8 to 10^10
samples, and the first batch after a resume.

Setup: a synthetic ``index.json`` of shards of 100,000 samples (no shard files: nothing is
read), ``StreamingDataset(local=..., batch_size=32, shuffle=True)`` with every other setting
at its default (``py1e``, ``relaxed``, ``random`` batching; ``num_canonical_nodes`` and
``shuffle_block_size`` as resolved for the world). Two worlds, each worker 0 of rank 0:

* ``1x8x2``: 1 node x 8 ranks x 2 workers, ``num_canonical_nodes`` = 1 (the default for one
  node): the worker reads the one canonical node, whose draws are all counted first.
* ``8x8x2 node 0`` / ``node 7``: 8 nodes, ``num_canonical_nodes`` = 8; node 0 counts its own
  canonical node's draws, node 7 those of all 8.

streamx: ``StreamingDataset(...)``, ``claim_pass()`` and the first piece of the worker's ids
(what iterating does before its first read), first 32 ids. mosaicml-streaming (``--mosaic``,
10^8 only): ``StreamingDataset(...)`` and ``generate_work('random', ...)`` for the world, then
the worker's first batch. Resume: after ``load_state_dict`` at half the epoch, the time from
``claim_pass()`` to the first batch.

The py1e count cache: a pass keeps its counted draws under ``<local>/.streamx/order-<uid>``
(epochs of 5x10^6 samples and more). Rows without ``cache`` remove that directory first, so
they count; ``--cache`` adds the rows with it (written by the row before, or by an untimed
run of the same worker first): a fresh process that reads the counted draws from the file.
``--marks`` adds resume rows whose state dict a checkpointing run made (worker 0 of rank 0 of
node 0, untimed, counting with the cache, then ``state_dict`` at half the epoch: with py1e's
resume marks where the tree has them, taken once they hold every canonical node, which the
node's first worker counts in the background after its first piece: *count_ahead_seconds*
is that wait); the count cache is removed before the timed resume, as on a machine that never
started the epoch. *state_dict s* is that call's time.

Each measurement runs in a fresh interpreter; imports (torch's included) are not timed.
*peak MiB* is the process's RSS high-water mark (``VmHWM``, imports included), *plan MiB*
that mark minus the RSS just before ``StreamingDataset(...)``. *cpu_seconds* is the process's
CPU time over the same span as *seconds* (all its threads): on a shared machine the wall time
also holds the time spent waiting for a core.

``--algo py1s`` measures another shuffle (every library, every row).

Usage: ``python benches/bench_scale.py [--sizes 1e8,1e9,1e10] [--worlds 1x8x2,8x8x2:0,8x8x2:7]
[--mosaic | --mosaic-only] [--resume] [--cache] [--marks] [--algo ALGO] [--timeout S]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import run_worker, status_mib

SCRIPT = Path(__file__).resolve()
SHARD = 100_000
BATCH = 32
SEED = 9176

_ENTRY = (
    '{"column_encodings": ["int"], "column_names": ["id"], "column_sizes": [8], '
    '"compression": null, "format": "mds", "hashes": [], '
    '"raw_data": {"basename": "shard.%06d.mds", "bytes": %d, "hashes": {}}, '
    '"samples": %d, "size_limit": 67108864, "version": 2, "zip_data": null}'
)


def write_index(directory: Path, n: int) -> Path:
    """``directory/index.json`` for ``n`` samples in shards of ``SHARD`` (no shard files)."""
    path = directory / "index.json"
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    shards = n // SHARD
    with open(path, "w", encoding="utf-8") as file:
        file.write('{"shards": [')
        file.write(
            ", ".join(_ENTRY % (s, 4 * (SHARD + 1) + 8 * SHARD, SHARD) for s in range(shards))
        )
        file.write('], "version": 2}')
    return path


def _count_dir(local: str) -> Path:
    """Where a pass keeps the py1e count cache for ``local`` (``streamx.cache.order_counts``)."""
    return Path(local) / ".streamx" / f"order-{os.getuid()}"


def _hwm_mib() -> float:
    return status_mib("VmHWM")


def _world(spec: dict[str, Any]) -> tuple[int, int, int, int]:
    """(nodes, ranks per node, workers per rank, node of the measured worker)."""
    shape, _, node = spec["world"].partition(":")
    nodes, ranks, workers = (int(x) for x in shape.split("x"))
    return nodes, ranks, workers, int(node or 0)


def do_streamx(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    import streamx
    from streamx.dataset.iteration import _worker_pieces
    from streamx.order.world import World

    nodes, ranks, workers, node = _world(spec)
    world = World(nodes, ranks, node * ranks, workers, 0)
    dataset_class = streamx.StreamingDataset  # imports torch: not timed
    count_dir = _count_dir(spec["local"])
    cached = count_dir.is_dir() and any(count_dir.iterdir())
    before = status_mib("VmRSS")
    start, cpu_start = time.perf_counter(), time.process_time()
    ds = dataset_class(
        local=spec["local"],
        batch_size=BATCH,
        shuffle=True,
        shuffle_seed=SEED,
        shuffle_algo=spec.get("algo", "py1e"),
        num_canonical_nodes=nodes,
    )
    if spec.get("resume"):
        state = {
            "epoch": 0,
            "sample_in_epoch": spec["n"] // 2,
            "num_canonical_nodes": nodes,
            "shuffle_seed": SEED,
            "initial_physical_nodes": None,
        }
        if spec.get("state"):
            state = json.loads(Path(spec["state"]).read_text(encoding="utf-8"))
        ds.load_state_dict(state)
        start, cpu_start = time.perf_counter(), time.process_time()
    claimed = ds.claim_pass()
    batch = next(_worker_pieces(claimed.start, claimed.layout, world))[:BATCH]
    seconds = time.perf_counter() - start
    extra: dict[str, Any] = {}
    if spec.get("checkpoint"):
        state, extra["count_ahead_seconds"] = _state_marking_every_node(ds, spec["n"], nodes)
        at = time.perf_counter()
        state = ds.state_dict(num_samples=spec["n"] // 2, from_beginning=True)
        extra["state_dict_seconds"] = time.perf_counter() - at
        extra["marks"] = len(state.get("streamx_py1e_marks", ""))
        Path(spec["checkpoint"]).write_text(json.dumps(state), encoding="utf-8")
    return {
        **extra,
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu_start,
        "peak_mib": _hwm_mib(),
        "plan_mib": _hwm_mib() - before,
        "first": np.asarray(batch).tolist()[:4],
        "cached": cached,
    }


def _state_marking_every_node(ds: Any, n: int, nodes: int) -> tuple[dict[str, Any], float]:
    """The state dict at half the epoch once its marks hold every canonical node (the node's
    first worker counts them in the background after its first piece), and the seconds that
    took from here; the last state dict after a minute otherwise."""
    from streamx.order.resume_marks import marked_nodes

    start = time.perf_counter()
    while True:
        state = ds.state_dict(num_samples=n // 2, from_beginning=True)
        marked = marked_nodes(state.get("streamx_py1e_marks"))
        if marked >= min(nodes, 24) or time.perf_counter() - start > 60:
            return state, time.perf_counter() - start
        time.sleep(0.01)


def do_mosaic(spec: dict[str, Any]) -> dict[str, Any]:
    from streaming import StreamingDataset
    from streaming.base.batching import generate_work
    from streaming.base.util import clean_stale_shared_memory
    from streaming.base.world import World

    clean_stale_shared_memory()
    nodes, ranks, workers, node = _world(spec)
    before = status_mib("VmRSS")
    start, cpu_start = time.perf_counter(), time.process_time()
    ds = StreamingDataset(
        local=spec["local"],
        batch_size=BATCH,
        shuffle=True,
        shuffle_seed=SEED,
        num_canonical_nodes=nodes,
        shuffle_algo=spec.get("algo", "py1e"),
        shuffle_block_size=max(4_000_000 // nodes, 1 << 18),  # resolved when it iterates
    )
    world = World(num_nodes=nodes, ranks_per_node=ranks, workers_per_rank=workers, worker=0)
    work = generate_work("random", ds, world, 0, 0)
    batch = work[node, 0, 0].flatten()
    batch = batch[batch >= 0][:BATCH]
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu_start,
        "peak_mib": _hwm_mib(),
        "plan_mib": _hwm_mib() - before,
        "first": batch.tolist()[:4],
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        spec = json.loads(argv[1])
        out = (do_mosaic if spec["lib"] == "streaming" else do_streamx)(spec)
        print(json.dumps(out))
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1e8,1e9,1e10")
    parser.add_argument("--worlds", default="1x8x2,8x8x2:0,8x8x2:7")
    parser.add_argument("--mosaic", action="store_true", help="mosaicml-streaming at 10^8")
    parser.add_argument("--resume", action="store_true", help="first batch after a resume")
    parser.add_argument("--mosaic-only", action="store_true", help="only mosaicml-streaming")
    parser.add_argument("--cache", action="store_true", help="also with the py1e count cache")
    parser.add_argument("--marks", action="store_true", help="resume from a checkpoint's state")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument(
        "--algo", default="py1e", help="the shuffle (py1e, py1s...) for every library"
    )
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "streamx_scale"))
    args = parser.parse_args(argv)
    rows = []
    for size in args.sizes.split(","):
        n = int(float(size))
        local = write_index(Path(args.data) / f"n{n:.0e}", n).parent
        for world in args.worlds.split(","):
            kinds = [] if args.mosaic_only else [("streamx", False, False)]
            if args.resume and not args.mosaic_only:
                kinds.append(("streamx", True, False))
            if args.cache and not args.mosaic_only:
                kinds += [("streamx", False, True), ("streamx", True, True)]
            if args.marks and not args.mosaic_only:
                kinds.append(("streamx", True, "marks"))
            if (args.mosaic or args.mosaic_only) and n <= 10**8:
                kinds.append(("streaming", False, False))
            for lib, resume, cache in kinds:
                spec = {"lib": lib, "n": n, "world": world, "local": str(local), "resume": resume}
                spec["algo"] = args.algo
                try:
                    if cache == "marks":
                        spec["state"], checkpoint = _checkpoint(spec, args.data, args.timeout)
                        spec["checkpoint_state"] = checkpoint
                        cache = False
                    _prepare_counts(spec, cache, args.timeout)
                    result = run_worker(SCRIPT, spec, args.timeout)
                except (RuntimeError, TimeoutError, OSError) as err:
                    result = {"error": str(err).strip().splitlines()[-1][:120]}
                row = {"n": f"{n:.0e}", "world": world, "lib": lib, "resume": resume}
                row["algo"] = args.algo
                row.update({"cache": cache, **spec.get("checkpoint_state", {}), **result})
                print(json.dumps(row), flush=True)
                rows.append(row)
    return 0


def _checkpoint(spec: dict[str, Any], data: str, timeout: float) -> tuple[str, dict[str, Any]]:
    """The state dict at half the epoch of an untimed run of worker 0 of rank 0 of node 0 of
    the row's world (counting, keeping the count cache): the path of its JSON, and the
    ``state_dict`` call's seconds and marks' length."""
    path = str(Path(data) / "checkpoint-state.json")
    shutil.rmtree(_count_dir(spec["local"]), ignore_errors=True)
    world = spec["world"].partition(":")[0]
    done = run_worker(
        SCRIPT, {**spec, "world": world, "resume": False, "checkpoint": path}, timeout
    )
    keys = ("state_dict_seconds", "marks", "count_ahead_seconds")
    return path, {k: done[k] for k in keys}


def _prepare_counts(spec: dict[str, Any], cache: bool, timeout: float) -> None:
    """No count cache for a row without it; for a row with it, the cache the row before
    left, or one an untimed run of the same worker (resumed too, for a resume row: py1s, py2s
    and py1br count only as far as the pieces reach) writes now."""
    count_dir = _count_dir(spec["local"])
    if not cache:
        shutil.rmtree(count_dir, ignore_errors=True)
    elif not (count_dir.is_dir() and any(count_dir.iterdir())):
        run_worker(SCRIPT, spec, timeout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
