"""Epoch plan (issue 3): time and peak memory to produce ONE worker's sample ids for an epoch.

Setup: ``N`` samples in about 5,000 uneven shards, 8 nodes x 8 ranks x 8 workers, batch 32,
``shuffle=True``, ``py1e`` and ``py1s`` with mosaicml-streaming's defaults for everything else
(``num_canonical_nodes`` = nodes for py1e, 64 x nodes for py1s; ``shuffle_block_size`` =
``max(4_000_000 // ncn, 1 << 18)``; ``relaxed`` partition; ``random`` batching).

* streamx: ``streamx._core.plan_worker(config, node, rank, worker)``.
* mosaicml-streaming: what its local leader does each epoch, ``generate_work('random', ...)``
  (``resample_streams`` + ``get_partitions`` + ``get_shuffle`` + the id mapping over the whole
  world), then the worker's slice, copied.

Each measurement runs in a fresh interpreter. Time is the wall time of the planning call only
(imports excluded). Memory is the process's RSS high-water mark (``VmHWM``); the plan's own
cost is reported as the high-water mark minus the RSS just before planning (after imports),
and the ratios use that. Both libraries' ids are hashed and must agree.

Usage: ``python benches/bench_plan.py [--sizes 1e7,1e8] [--algos py1e,py1s] [--repeat N]
[--quick] [--readme]``. ``--readme`` rewrites the "Epoch plan (issue 3)" section of
``benches/README.md`` with the results.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
import time
from pathlib import Path
from typing import Any

from common import format_table, machine, run_worker, worker_main, write_results

SCRIPT = Path(__file__).resolve()
README = SCRIPT.parent / "README.md"
SECTION = "## Epoch plan (issue 3)"
WORLD = (8, 8, 8)  # nodes, ranks per node, workers per rank
BATCH = 32
SHARDS = 5_000
SEED, EPOCH = 9176, 1
WORKER = (7, 7, 7)  # the last node: its canonical nodes come last in the generator
TARGET_SPEEDUP, TARGET_MEMORY = 20.0, 0.5


def shard_sizes(total: int) -> list[int]:
    """About ``SHARDS`` uneven shard sizes summing to ``total``."""
    import numpy as np

    weights = np.random.default_rng(total).uniform(0.5, 1.5, SHARDS)
    sizes = np.floor(weights / weights.sum() * total).astype(np.int64)
    sizes[: total - int(sizes.sum())] += 1
    return sizes.tolist()


def settings(algo: str) -> tuple[int, int]:
    """mosaicml-streaming's default canonical nodes and block size for ``algo``."""
    ncn = WORLD[0] * (64 if algo in ("py1s", "py2s") else 1)
    return ncn, max(4_000_000 // ncn, 1 << 18)


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} missing from /proc/self/status")


def _streamx(sizes: list[int], algo: str) -> Any:
    from streamx import _core

    ncn, block = settings(algo)
    config = {
        "streams": [(sizes, sum(sizes), 1.0)],
        "seed": SEED,
        "epoch": EPOCH,
        "shuffle": True,
        "shuffle_algo": algo,
        "shuffle_block_size": block,
        "num_canonical_nodes": ncn,
        "partition_algo": "relaxed",
        "batching_method": "random",
        "batch_size": BATCH,
        "world": WORLD,
        "sample_in_epoch": 0,
        "initial_physical_nodes": None,
        "sampling_method": "balanced",
        "sampling_granularity": 1,
    }
    return lambda: _core.plan_worker(config, *WORKER)[0]


def _streaming(sizes: list[int], algo: str) -> Any:
    """A dataset stand-in carrying what ``generate_work`` reads, and the leader's work."""
    from types import SimpleNamespace

    import numpy as np
    from streaming.base.batching import generate_work
    from streaming.base.dataset import StreamingDataset
    from streaming.base.world import World

    ncn, block = settings(algo)
    per_shard = np.array(sizes, np.int64)
    ds = SimpleNamespace(
        streams=[SimpleNamespace(choose=int(per_shard.sum()), proportion=1.0)],
        num_streams=1,
        shard_offset_per_stream=np.array([0]),
        shards_per_stream=np.array([len(sizes)]),
        samples_per_shard=per_shard,
        sample_offset_per_shard=per_shard.cumsum() - per_shard,
        epoch_size=int(per_shard.sum()),
        shuffle_seed=SEED,
        shuffle=True,
        shuffle_algo=algo,
        shuffle_block_size=block,
        num_canonical_nodes=ncn,
        partition_algo="relaxed",
        batch_size=BATCH,
        initial_physical_nodes=None,
        sampling_method="balanced",
        sampling_granularity=1,
        epoch_seed_change=True,
    )
    ds.resample_streams = lambda epoch, stream_id=None: StreamingDataset.resample_streams(
        ds, epoch, stream_id
    )
    world = World(num_nodes=WORLD[0], ranks_per_node=WORLD[1], workers_per_rank=WORLD[2], worker=0)

    def run() -> Any:
        epoch = generate_work("random", ds, world, EPOCH, 0)
        return epoch[WORKER].flatten()  # the worker's copy of its slice

    return run


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Worker: one planning call in this fresh process."""
    import numpy as np

    sizes = shard_sizes(spec["n"])
    plan = (_streamx if spec["lib"] == "streamx" else _streaming)(sizes, spec["algo"])
    before = _status_kib("VmRSS")
    start = time.perf_counter()
    ids = plan()
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    ids = np.asarray(ids)
    return {
        "seconds": seconds,
        "peak_mib": peak / 1024,
        "plan_mib": (peak - before) / 1024,
        "num_ids": int(ids.size),
        "ids_sha": __import__("hashlib").sha256(ids.astype(np.int64).tobytes()).hexdigest()[:16],
    }


def run_pair(n: int, algo: str, repeat: int, timeout: float) -> dict[str, Any]:
    """Best-of-``repeat`` for each library on one configuration."""
    row: dict[str, Any] = {"n": n, "algo": algo, "ncn": settings(algo)[0]}
    for lib in ("streamx", "streaming"):
        runs = []
        for _ in range(repeat if lib == "streamx" or n < 10**8 else 1):
            try:
                runs.append(run_worker(SCRIPT, {"lib": lib, "n": n, "algo": algo}, timeout))
            except (RuntimeError, TimeoutError, OSError) as err:  # out of memory or time
                row[f"{lib}_error"] = str(err).strip().splitlines()[-1][:200]
                break
            print(f"  {lib:9} n={n:.0e} {algo}: {runs[-1]}", flush=True)
        if runs:
            row[f"{lib}_s"] = min(r["seconds"] for r in runs)
            row[f"{lib}_peak_mib"] = min(r["peak_mib"] for r in runs)
            row[f"{lib}_plan_mib"] = min(r["plan_mib"] for r in runs)
            row[f"{lib}_sha"] = runs[0]["ids_sha"]
    if "streamx_s" in row and "streaming_s" in row:
        row["speedup"] = row["streaming_s"] / row["streamx_s"]
        row["plan_mem_ratio"] = row["streamx_plan_mib"] / row["streaming_plan_mib"]
        row["peak_mem_ratio"] = row["streamx_peak_mib"] / row["streaming_peak_mib"]
        row["same_ids"] = row["streamx_sha"] == row["streaming_sha"]
    return row


COLUMNS = [
    ("n", "samples", ".0e"),
    ("algo", "algo", "s"),
    ("ncn", "ncn", "d"),
    ("streaming_s", "streaming s", ".2f"),
    ("streamx_s", "streamx s", ".3f"),
    ("speedup", "speedup", ".1f"),
    ("streaming_plan_mib", "streaming plan MiB", ".0f"),
    ("streamx_plan_mib", "streamx plan MiB", ".0f"),
    ("plan_mem_ratio", "plan mem ratio", ".3f"),
    ("streaming_peak_mib", "streaming peak MiB", ".0f"),
    ("streamx_peak_mib", "streamx peak MiB", ".0f"),
    ("peak_mem_ratio", "peak ratio", ".3f"),
    ("same_ids", "same ids", ""),
]


DESCRIPTION = f"""\
`benches/bench_plan.py`: time and peak memory to produce ONE worker's sample ids for an
epoch of N samples in {SHARDS:,} uneven shards, on 8 nodes x 8 ranks x 8 workers with
batch {BATCH}, `shuffle=True`, `py1e` and `py1s`, every other setting at mosaicml-streaming's
default (`num_canonical_nodes` = 8 for py1e and 512 for py1s, `shuffle_block_size` =
`max(4_000_000 // ncn, 1 << 18)`, `relaxed`, `random` batching).

- streamx: `_core.plan_worker(config, 7, 7, 7)`. The worker on the last node is the worst
  case: its canonical nodes come last, so the generator runs through all the others first.
- mosaicml-streaming: what its local leader does every epoch, `generate_work('random', ...)`
  (`resample_streams` + `get_partitions` + `get_shuffle` + the id mapping, over the whole
  world), then the worker's slice.
- Each measurement is one call in a fresh interpreter; time excludes imports. *plan MiB* is
  the process's RSS high-water mark (`VmHWM`) minus its RSS just before planning; *peak MiB*
  is the whole high-water mark (the mosaicml-streaming process also has torch loaded, so
  the plan columns are the fair comparison). `same ids`: the two id arrays hash equal."""

HOW = """\
How the worker's plan stays small (`rust/streamx-core/src/`: `shuffle/`, `resample.rs`,
`batching/random.rs`):

- The partition's worker slice is closed-form; resampling stays as a list of shuffle units
  (an epoch id is mapped to its sample id by binary search), never an epoch-sized array.
- Every shuffle but `naive` keeps canonical node k in a fixed range of the order and draws
  node after node from one generator. Nodes before the last one the worker reads only have
  their draws counted (masked-rejection Fisher-Yates draws scanned without swapping, uniform
  draws skipped by a PCG64 jump); nodes after it are not visited (py1e decides its
  small-block warning from span sizes where it can). Within a node that is read, only the
  spans (py1s, py2s) or block runs (py1br) holding the worker's positions are laid out; py1e
  lays out only the window of the node that can hold or outrank the worker's ranks (as wide
  as the largest shift the blocks allow), counts it into buckets of `floor(position) / 4`
  and sorts only the buckets holding those ranks.
- Memory is the worker's ids plus, for py1e, two 8-byte words per sample of those windows
  (sample id, position) and a 4-byte count per 4 of them.
- `naive` still builds the whole permutation (one Fisher-Yates over the epoch)."""


def verdict(rows: list[dict[str, Any]]) -> str:
    """One line on the targets over the measured cells."""
    both = [r for r in rows if "speedup" in r]
    if not both:
        return "No cell was measured for both libraries."
    speed = min(r["speedup"] for r in both)
    memory = max(r["plan_mem_ratio"] for r in both)
    met = speed >= TARGET_SPEEDUP and memory <= TARGET_MEMORY
    return (
        f"Targets {'met' if met else 'NOT met'} over the {len(both)} cells measured for both "
        f"libraries: lowest speedup {speed:.1f}x (target {TARGET_SPEEDUP:.0f}x), highest plan "
        f"memory ratio {memory:.3f} (target {TARGET_MEMORY})."
    )


def write_readme(run: dict[str, Any], command: str, table: str, notes: list[str]) -> None:
    """Replaces (or appends) this benchmark's section of ``benches/README.md``."""
    today = dt.date.today().isoformat()
    info = run["machine"]
    body = (
        f"{SECTION}\n\n{DESCRIPTION}\n\nMeasured {today} (results `{run['results']}`) with "
        f"`{command}` on {info['cpus']} CPUs (load average {info['loadavg_at_start'][0]:.1f} at "
        "the start); best of the runs per cell (one run for mosaicml-streaming at 10^8), each "
        "in a fresh process.\n\n"
        f"{table}\n\n{verdict(run['rows'])}\n"
    )
    if notes:
        body += "\n" + "\n".join(f"- {note}" for note in notes) + "\n"
    body += f"\n{HOW}\n"
    text = README.read_text() if README.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: body + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + body
    README.write_text(text.rstrip("\n") + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e7,1e8", help="comma-separated sample counts")
    parser.add_argument("--algos", default="py1e,py1s")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (mosaic at 1e8: 1)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per measurement")
    parser.add_argument("--quick", action="store_true", help="sizes 1e6,1e7 and one run each")
    parser.add_argument("--readme", action="store_true", help="write the README section")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeat = "1e6,1e7", 1
    info = machine()
    rows = []
    for n in (int(float(s)) for s in args.sizes.split(",")):
        for algo in args.algos.split(","):
            rows.append(run_pair(n, algo, args.repeat, args.timeout))
    table = format_table(rows, COLUMNS)
    print(table)
    print(verdict(rows))
    notes = [
        f"{r['n']:.0e} {r['algo']}: {k} failed: {r[k]}"
        for r in rows
        for k in r
        if k.endswith("_error")
    ]
    notes += [
        f"{r['n']:.0e} {r['algo']}: the two libraries' ids differ"
        for r in rows
        if r.get("same_ids") is False
    ]
    for note in notes:
        print(note)
    path = write_results("plan", {"machine": info, "rows": rows})
    if args.readme:
        command = " ".join([".venv/bin/python benches/bench_plan.py", *argv])
        run = {"machine": info, "rows": rows, "results": path.name}
        write_readme(run, command, table, notes)
    failed = any(not r.get("same_ids", True) for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    if not worker_main(sys.argv[1:], measure):
        sys.exit(main(sys.argv[1:]))
