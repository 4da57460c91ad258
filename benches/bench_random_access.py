"""Random access ``dataset[i]``: streamx on Parquet in place, on MDS and on WebDataset tars,
against LitData (its optimized chunks), Lance (pylance, a copy written by
``lance.write_dataset``) and ``wids`` (``ShardListDataset`` over the same tars), on the same
samples (issue 23).

Two cases, the tables of ``bench_in_place.py``: ``images`` (``--images`` rows of ``id``,
``label`` and ``jpeg``, 90-110 KB of random bytes; row groups of ``--image-group`` rows) and
``text`` (``--rows`` rows of ``id``, ``text`` and eight numbers). Each is written once as
Parquet, then from that table as MDS, tars, LitData chunks and Lance (see
``random_access_copies.py``); 64 MiB shards, tars and chunks.

Each library opens its copy in a fresh interpreter (``open s``; the import before the
clock), then reads ``dataset[i]``
for ``--accesses`` distinct random ids (one fixed seed, the same ids for every library),
each access timed on its own. Reported: samples/s over the accesses, per-access latency p50
and p99, ratios against the fastest peer and against LitData, and ``correct``: every sample
equal, column by column and type by type, to its Parquet row. Two modes:

- ``warm``: the local files, read where they lie (they were just written: page cache warm);
- ``cold``: from the bench's nginx over plain HTTP into an empty cache (``--cold-accesses``
  ids): streamx by URL, ``wids`` through its curl downloads, LitData and Lance as ``s3://``
  keys against the same server (path-style; it answers GETs, not listings).

``--repeat R`` runs every library R times, alternating, and keeps each one's best run and
the range of its samples/s. ``--before DIR`` (a ``python`` tree, such as ``git archive``
of another commit plus its extension) adds each streamx library of ``--libs`` once more,
as ``<lib>@before``, run from that tree in the same alternation. ``cache MB``: what the
library left in its cache directory after its accesses. ``median samples/s``: the median
of the rounds. ``--cpu`` runs each round's accesses once more in a fresh interpreter with no
clock read or check between them and reports the process's CPU time for them (median over
rounds) and LitData's CPU time over it: on a shared machine waiting for a core does not
count there, so it moves less than the wall clock.

Usage: ``nice python benches/bench_random_access.py [--rows N] [--images N] [--accesses N]
[--cold-accesses N] [--cases ...] [--libs ...] [--modes warm cold] [--repeat R] [--quick]
[--before DIR] [--cpu]``.
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

import numpy as np

from common import S3_BENCH_ENV, format_table, machine, run_worker, worker_main, write_results
from random_access_copies import parquet_dir, read_table, write_copies
from random_access_readers import LIBS, PEERS, open_getter, preload, same_row

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from nginx_server import Nginx

SCRIPT = Path(__file__).resolve()
CASES = ("images", "text")
SEED = 23
TIMEOUT_S = 900


def access(spec: dict[str, Any]) -> dict[str, Any]:
    """One library's accesses, in this fresh interpreter."""
    order = np.random.default_rng(SEED).permutation(spec["rows"])[: spec["accesses"]].tolist()
    expected = read_table(str(parquet_dir(Path(spec["root"]), spec["name"]))).take(order)
    rows = expected.to_pylist()
    preload(spec["lib"])
    began = time.perf_counter()
    get = open_getter(spec)
    opened = time.perf_counter() - began
    if spec.get("cpu_only"):
        return _cpu_only(get, order)
    latency = np.empty(len(order), np.int64)
    correct = True
    clock = time.perf_counter_ns
    for k, i in enumerate(order):
        start = clock()
        sample = get(i)
        latency[k] = clock() - start
        # Checked between the accesses, off their clock.
        correct = correct and same_row(spec["lib"], sample, rows[k])
    seconds = latency.sum() / 1e9
    cache = Path(spec["local"])
    held = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) if cache.is_dir() else 0
    return {
        "cache_mb": held / 1e6,
        "open_s": opened,
        "samples_s": len(order) / seconds,
        "p50_us": float(np.percentile(latency, 50)) / 1e3,
        "p99_us": float(np.percentile(latency, 99)) / 1e3,
        "correct": bool(correct),
    }


def _cpu_only(get: Any, order: list[int]) -> dict[str, Any]:
    """The accesses' CPU time, all threads of this process, with no clock read and no check
    between them: less disturbed than the wall clock by other work on the machine."""
    began = time.process_time()
    for i in order:
        get(i)
    return {"cpu_ms": (time.process_time() - began) * 1e3, "load": os.getloadavg()[0]}


def _run(spec: dict[str, Any], tree: str | None) -> dict[str, Any]:
    env = None if tree is None else {**os.environ, "PYTHONPATH": tree}
    try:
        return run_worker(SCRIPT, spec, timeout=TIMEOUT_S, env=env)
    except Exception as err:  # recorded, not fatal: one library failing
        print(f"{spec['lib']} {spec['name']} {spec['mode']}: failed: {str(err)[-600:]}")
        return {"samples_s": None, "correct": False, "error": str(err)[-600:]}


def _measure(
    root: Path, name: str, rows: int, mode: str, args: argparse.Namespace, endpoint: str | None
) -> list[dict[str, Any]]:
    shown = list(args.libs)
    if args.before:
        shown += [f"{lib}@before" for lib in args.libs if lib.startswith("streamx")]
    runs: dict[str, list[dict[str, Any]]] = {lib: [] for lib in shown}
    accesses = min(rows, args.accesses if mode == "warm" else args.cold_accesses)
    for round_ in range(args.repeat):
        for entry in shown[round_ % len(shown) :] + shown[: round_ % len(shown)]:
            lib, _, before = entry.partition("@")
            cache = Path(tempfile.mkdtemp(prefix=f"cache-{lib}-", dir=root.parent))
            spec = {"lib": lib, "name": name, "rows": rows, "accesses": accesses, "mode": mode}
            spec.update(root=str(root), local=str(cache / "c"), endpoint=endpoint)
            result = _run(spec, args.before if before else None)
            shutil.rmtree(cache, ignore_errors=True)
            if args.cpu and result.get("samples_s"):
                result.update(_cpu_run(spec, cache, args.before if before else None))
            print(entry, name, mode, result, flush=True)
            runs[entry].append(result)
    table = [_summary(name, mode, lib, accesses, results) for lib, results in runs.items()]
    peers = [r["samples_s"] for r in table if r["lib"] in PEERS and r.get("samples_s")]
    litdata = next((r for r in table if r["lib"] == "litdata"), {})
    for row in table:
        ours = row.get("samples_s")
        row["vs_best_peer"] = ours / max(peers) if ours and peers else None
        row["vs_litdata"] = _ratio(ours, litdata.get("samples_s"))
        row["median_vs_litdata"] = _ratio(row.get("median_s"), litdata.get("median_s"))
        row["cpu_vs_litdata"] = _ratio(litdata.get("cpu_ms"), row.get("cpu_ms"))
    return table


def _cpu_run(spec: dict[str, Any], cache: Path, tree: str | None) -> dict[str, Any]:
    """The same accesses again in a fresh interpreter, timed by CPU only (``cpu_ms``)."""
    cache.mkdir(parents=True, exist_ok=True)
    found = _run({**spec, "cpu_only": True}, tree)
    shutil.rmtree(cache, ignore_errors=True)
    return {"cpu_ms": found.get("cpu_ms"), "load": found.get("load")}


def _summary(
    name: str, mode: str, lib: str, accesses: int, results: list[dict[str, Any]]
) -> dict[str, Any]:
    """One library's rounds: its best round, the range and median of samples/s and the
    median CPU time (``--cpu``)."""
    speeds = [r["samples_s"] for r in results if r.get("samples_s")]
    cpus = [r["cpu_ms"] for r in results if r.get("cpu_ms")]
    best = max(results, key=lambda r: r.get("samples_s") or 0.0)
    row = {"case": name, "mode": mode, "lib": lib, "accesses": accesses, **best}
    row["range"] = f"{min(speeds):,.0f}-{max(speeds):,.0f}" if speeds else None
    row["median_s"] = float(np.median(speeds)) if speeds else None
    row["cpu_ms"] = float(np.median(cpus)) if cpus else None
    row["cpu_range"] = f"{min(cpus):,.1f}-{max(cpus):,.1f}" if cpus else None
    row["correct"] = all(r["correct"] for r in results)
    row["rounds"] = [r.get("samples_s") for r in results]
    row["cpu_rounds"] = [r.get("cpu_ms") for r in results]
    return row


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    return ours / theirs if ours and theirs else None


def bench(root: Path, cases: dict[str, int], args: argparse.Namespace) -> list[dict[str, Any]]:
    table = []
    for name, rows in cases.items():
        if "warm" in args.modes:
            table += _measure(root, name, rows, "warm", args, None)
        if "cold" in args.modes:
            os.environ.update(S3_BENCH_ENV)
            with Nginx(root) as server:
                table += _measure(root, name, rows, "cold", args, server.endpoint)
        print(format_table([r for r in table if r["case"] == name], COLUMNS), flush=True)
    return table


COLUMNS = [
    ("case", "case", ""),
    ("mode", "mode", ""),
    ("lib", "library", ""),
    ("accesses", "accesses", ","),
    ("samples_s", "samples/s", ",.0f"),
    ("range", "range", ""),
    ("p50_us", "p50 µs", ",.0f"),
    ("p99_us", "p99 µs", ",.0f"),
    ("open_s", "open s", ".2f"),
    ("cache_mb", "cache MB", ",.1f"),
    ("vs_best_peer", "vs best peer", ".2f"),
    ("vs_litdata", "vs LitData", ".2f"),
    ("median_s", "median samples/s", ",.0f"),
    ("median_vs_litdata", "median vs LitData", ".2f"),
    ("cpu_ms", "CPU ms (median)", ",.1f"),
    ("cpu_range", "CPU ms range", ""),
    ("cpu_vs_litdata", "CPU vs LitData", ".2f"),
    ("correct", "correct", ""),
]


def main(argv: list[str]) -> int:
    if worker_main(argv, access):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000, help="text rows")
    parser.add_argument("--images", type=int, default=4_000, help="image rows")
    parser.add_argument("--image-group", type=int, default=64, help="rows per images row group")
    parser.add_argument("--accesses", type=int, default=4_000, help="warm accesses per library")
    parser.add_argument("--cold-accesses", type=int, default=400)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--libs", nargs="+", choices=LIBS, default=list(LIBS))
    parser.add_argument("--modes", nargs="+", choices=("warm", "cold"), default=["warm", "cold"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--before", help="another python tree, its streamx libraries alternated")
    parser.add_argument(
        "--cpu", action="store_true", help="each run again, timed by its CPU time only"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.images, args.accesses, args.cold_accesses = 5_000, 200, 500, 100
    counts = {"text": args.rows, "images": args.images}
    cases = {name: counts[name] for name in args.cases}
    root = Path(tempfile.mkdtemp(prefix="streamx-random-access-")) / "data"
    info = machine()
    try:
        sizes = {}
        for name, rows in cases.items():
            began = time.perf_counter()
            sizes[name] = write_copies(root, name, rows, args.image_group)
            print(f"{name}: copies {sizes[name]} in {time.perf_counter() - began:.0f} s")
        table = bench(root, cases, args)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    print(format_table(table, COLUMNS))
    payload = {"machine": info, "cases": cases, "sizes": sizes, "args": vars(args), "rows": table}
    print(f"results: {write_results('random_access', payload)}")
    return 0 if all(r["correct"] for r in table) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
