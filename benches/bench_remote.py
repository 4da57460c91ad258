"""Remote streaming, streamx vs mosaicml-streaming in one run: a cold-cache epoch from a local
S3 server (moto, on 127.0.0.1, in its own process).

Two datasets, written once with ``streamx.MDSWriter`` straight to the server:

- ``100kb``: binary samples of about 100 KB (``{'id': 'int', 'data': 'bytes'}``), raw shards;
- ``tokens``: 2048-token samples (``{'id': 'int', 'tokens': 'ndarray:uint32:2048'}``),
  zstd-compressed shards.

Each measurement is one epoch in a fresh interpreter with an empty local cache, through the
library's ``StreamingDataLoader`` (``num_workers`` workers, ``shuffle=False``): time to the first
batch (from building the dataset, index download included) and throughput over the epoch (MB/s
of bytes fetched from the server). Both libraries run unlimited; both also run with
``cache_limit`` at 10% of the decompressed dataset (what the cache holds). Every run checks that
each sample arrived exactly once with the right content.

Usage: ``python benches/bench_remote.py [--quick] [--repeat N] [--only 100kb|tokens]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from common import (
    S3_BENCH_ENV,
    format_table,
    import_lib,
    machine,
    run_worker,
    worker_main,
    write_results,
)

SCRIPT = Path(__file__).resolve()
BUCKET = "bench"
# name -> (samples, shard size_limit, compression, batch size)
FULL = {"100kb": (3_000, 4 << 20, None, 16), "tokens": (36_000, 2_500_000, "zstd", 64)}
QUICK = {"100kb": (600, 2 << 20, None, 16), "tokens": (6_000, 1 << 20, "zstd", 64)}
WORKERS = 2
# Issue 5 targets: TTFS ratio (streamx/streaming) at most, throughput ratios at least.
TTFS_TARGET = 0.5
THROUGHPUT_TARGET = 2.0
LIMITED_TARGET = 0.8


def _blob_pool(seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(int(rng.integers(90_000, 110_000))) for _ in range(32)]


def _tokens(i: int) -> np.ndarray:
    """Token ids below 50,257 (a GPT-2 vocabulary), deterministic per sample."""
    rng = np.random.default_rng(i)
    return rng.integers(0, 50_257, 2048, dtype=np.uint32)


def write_dataset(name: str, count: int, size_limit: int, compression: str | None) -> None:
    """Writes one dataset to ``s3://bench/<name>`` with streamx."""
    import streamx

    if name == "100kb":
        columns = {"id": "int", "data": "bytes"}
        pool = _blob_pool()
    else:
        columns = {"id": "int", "tokens": "ndarray:uint32:2048"}
    with streamx.MDSWriter(
        out=f"s3://{BUCKET}/{name}",
        columns=columns,
        size_limit=size_limit,
        compression=compression,
        hashes=["xxh64"],
    ) as writer:
        for i in range(count):
            if name == "100kb":
                writer.write({"id": i, "data": pool[i % len(pool)]})
            else:
                writer.write({"id": i, "tokens": _tokens(i)})


def _collate(batch: list[Any]) -> list[Any]:
    return batch


def do_epoch(spec: dict[str, Any]) -> dict[str, Any]:
    """One cold-cache epoch through the library's StreamingDataLoader."""
    module = import_lib(spec["lib"])
    import torch  # noqa: F401  (imported before the clock starts, by both)

    name, count = spec["dataset"], spec["count"]
    pool = _blob_pool() if name == "100kb" else []
    seen = np.zeros(count, np.int32)
    correct = True
    first_batch = None
    start = time.perf_counter()
    ds = module.StreamingDataset(
        remote=f"s3://{BUCKET}/{name}",
        local=spec["local"],
        batch_size=spec["batch_size"],
        shuffle=False,
        cache_limit=spec["cache_limit"],
    )
    loader = module.StreamingDataLoader(
        ds, batch_size=spec["batch_size"], num_workers=spec["workers"], collate_fn=_collate
    )
    for batch in loader:
        if first_batch is None:
            first_batch = time.perf_counter() - start
        for sample in batch:
            i = int(sample["id"])
            seen[i] += 1
            if name == "100kb":
                data = sample["data"]
                expected = pool[i % len(pool)]
                correct &= len(data) == len(expected) and data[:64] == expected[:64]
            elif i % 97 == 0:
                correct &= bool(np.array_equal(sample["tokens"], _tokens(i)))
            else:
                correct &= len(sample["tokens"]) == 2048
    elapsed = time.perf_counter() - start
    correct &= bool((seen == 1).all())
    return {"ttfs": first_batch, "seconds": elapsed, "correct": bool(correct)}


def dispatch(spec: dict[str, Any]) -> dict[str, Any]:
    if spec["op"] == "write":
        write_dataset(spec["dataset"], spec["count"], spec["size_limit"], spec["compression"])
        return {}
    return do_epoch(spec)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3 server in its own process on 127.0.0.1, with the environment pointing at it."""
    port = _free_port()
    code = (
        "import logging, time\n"
        "from moto.server import ThreadedMotoServer\n"
        "logging.getLogger('werkzeug').setLevel(logging.ERROR)\n"
        f"ThreadedMotoServer(ip_address='127.0.0.1', port={port}, verbose=False).start()\n"
        "time.sleep(1e6)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update(S3_BENCH_ENV, S3_ENDPOINT_URL=endpoint)
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the S3 server did not start")
            time.sleep(0.2)
        import boto3

        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        proc.kill()
        proc.wait()


def _dataset_bytes(name: str) -> tuple[int, int, int]:
    """(bytes stored on the server, bytes of the decompressed shards the cache holds, largest
    shard's raw+zip bytes), from the index."""
    import json

    import boto3

    client = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
    index = json.loads(client.get_object(Bucket=BUCKET, Key=f"{name}/index.json")["Body"].read())
    stored = raw_total = largest = 0
    for shard in index["shards"]:
        raw = shard["raw_data"]["bytes"]
        packed = (shard.get("zip_data") or {}).get("bytes", 0)
        stored += packed or raw
        raw_total += raw
        largest = max(largest, raw + packed)
    return stored, raw_total, largest


def best_epoch(spec: dict[str, Any], root: Path, repeat: int) -> dict[str, Any]:
    """Fastest of ``repeat`` cold-cache epochs (each in a fresh cache directory)."""
    runs = []
    for attempt in range(repeat):
        local = root / f"{spec['lib']}-{spec['dataset']}-{spec['mode']}-{attempt}"
        result = run_worker(SCRIPT, {**spec, "local": str(local)})
        shutil.rmtree(local, ignore_errors=True)
        runs.append(result)
    fastest = min(runs, key=lambda r: r["seconds"])
    return {
        **fastest,
        "ttfs": min(r["ttfs"] for r in runs),
        "correct": all(r["correct"] for r in runs),
    }


TABLE = [
    ("dataset", "dataset", ""),
    ("mode", "cache", ""),
    ("limit_mb", "limit MB", ".1f"),
    ("samples", "samples", ","),
    ("streamx_ttfs", "streamx TTFS s", ".2f"),
    ("streaming_ttfs", "streaming TTFS s", ".2f"),
    ("ttfs_ratio", "TTFS ratio", ".2f"),
    ("streamx_mbs", "streamx MB/s", ".1f"),
    ("streaming_mbs", "streaming MB/s", ".1f"),
    ("ratio", "throughput ratio", ".2f"),
    ("vs_unlimited", "streamx vs unlimited", ".2f"),
    ("correct", "correct", ""),
]


def bench_dataset(
    name: str, sizes: dict[str, Any], root: Path, repeat: int
) -> list[dict[str, Any]]:
    count, size_limit, compression, batch_size = sizes[name]
    began = time.perf_counter()
    run_worker(
        SCRIPT,
        {
            "op": "write",
            "dataset": name,
            "count": count,
            "size_limit": size_limit,
            "compression": compression,
        },
    )
    stored, raw_total, largest = _dataset_bytes(name)
    print(
        f"{name}: {count:,} samples, {stored / 1e6:.0f} MB stored, {raw_total / 1e6:.0f} MB"
        f" decompressed, largest shard {largest:,} B (raw+zip), written in"
        f" {time.perf_counter() - began:.1f}s",
        flush=True,
    )
    # 10% of what the cache holds (decompressed shards), never below mosaicml-streaming's
    # minimum of four of the largest shards.
    limit = max(raw_total // 10, 4 * largest + 100_000)
    rows = []
    for mode, cache_limit in (("unlimited", None), ("10%", limit)):
        results = {}
        for lib in ("streaming", "streamx"):
            spec = {
                "op": "epoch",
                "lib": lib,
                "dataset": name,
                "mode": mode,
                "count": count,
                "batch_size": batch_size,
                "workers": WORKERS,
                "cache_limit": cache_limit,
            }
            results[lib] = best_epoch(spec, root, repeat)
        ours, theirs = results["streamx"], results["streaming"]
        rows.append(
            {
                "dataset": name,
                "mode": mode,
                "cache_limit": cache_limit,
                "samples": count,
                "stored_bytes": stored,
                "raw_bytes": raw_total,
                "limit_mb": None if cache_limit is None else cache_limit / 1e6,
                "streamx_ttfs": ours["ttfs"],
                "streaming_ttfs": theirs["ttfs"],
                "ttfs_ratio": ours["ttfs"] / theirs["ttfs"],
                "streamx_seconds": ours["seconds"],
                "streaming_seconds": theirs["seconds"],
                "streamx_mbs": stored / ours["seconds"] / 1e6,
                "streaming_mbs": stored / theirs["seconds"] / 1e6,
                "ratio": theirs["seconds"] / ours["seconds"],
                "correct": ours["correct"] and theirs["correct"],
            }
        )
        print(format_table(rows[-1:], TABLE), flush=True)
    rows[1]["vs_unlimited"] = rows[0]["streamx_seconds"] / rows[1]["streamx_seconds"]
    return rows


def main(argv: list[str]) -> int:
    """Runs every measurement, prints the table and writes ``benches/results/remote-*.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small datasets, for a smoke run")
    parser.add_argument("--repeat", type=int, default=1, help="epochs per measurement; best kept")
    parser.add_argument("--only", choices=sorted(FULL), help="one dataset only")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    names = [args.only] if args.only else list(sizes)
    info = machine()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="streamx-bench-remote-") as tmp, s3_server():
        for name in names:
            rows += bench_dataset(name, sizes, Path(tmp), args.repeat)
    print()
    print(format_table(rows, TABLE))
    payload = {"machine": info, "quick": args.quick, "workers": WORKERS, "rows": rows}
    print(f"\nresults: {write_results('remote', payload)}")
    failed = 0
    for row in rows:
        if not row["correct"]:
            print(f"INCORRECT: {row['dataset']} {row['mode']}")
            failed += 1
        if row["mode"] == "unlimited":
            if row["ttfs_ratio"] > TTFS_TARGET:
                print(f"below target: {row['dataset']} TTFS ratio {row['ttfs_ratio']:.2f}")
            if row["ratio"] < THROUGHPUT_TARGET:
                print(f"below target: {row['dataset']} throughput {row['ratio']:.2f}x")
        elif row.get("vs_unlimited", 1.0) < LIMITED_TARGET:
            print(f"below target: {row['dataset']} 10% cache at {row['vs_unlimited']:.2f}")
    return failed


if __name__ == "__main__":
    if not worker_main(sys.argv[1:], dispatch):
        sys.exit(1 if main(sys.argv[1:]) else 0)
