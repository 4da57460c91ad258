"""Writing datasets: streamx's MDSWriter vs mosaicml-streaming's, LitData's BinaryWriter and
WebDataset's ShardWriter.

Three workloads, as in issue 12, with 64 MiB shards (chunks), each written raw and with zstd:

* ``img``: 10,000 samples of about 100 KB of bytes plus an int label;
* ``tokens``: 100,000 samples of ``uint32[2048]``;
* ``text``: 200,000 strings of 50-400 characters plus an int.

Each (library, workload, compression) is written in a fresh interpreter, from samples built
before the clock starts; the time runs from the writer's construction to the end of
``finish`` (``done`` for LitData), so every byte is on disk (in the page cache) when it
stops. The runs are interleaved across libraries and repeated, and the ratios use the
median of each. ``correct`` means streamx's files are byte-identical to mosaic's, and
LitData's index counts every sample.

LitData's zstd is its whole-file mode (``compression_level='chunk'``), the one that matches
MDS's whole-shard compression. WebDataset 1.0.2 writes raw tar shards only (no zstd), so
it is a peer of the raw rows; its tar is checked to hold every sample.

Usage: ``python benches/bench_write.py [--quick] [--repeat N] [--only img,tokens]
[--compression none,zstd]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import wds_peer
from common import (
    format_table,
    machine,
    run_worker,
    same_files,
    timed_cpu,
    worker_main,
    write_results,
)

SCRIPT = Path(__file__).resolve()
SHARD = 64 << 20
LIBS = ("streamx", "streaming", "litdata")
# WebDataset writes tar shards without whole-shard compression: only the raw rows.
RAW_ONLY = ("webdataset",)
COLUMNS = {
    "img": {"data": "bytes", "label": "int"},
    "tokens": {"tokens": "ndarray:uint32:2048"},
    "text": {"id": "int", "text": "str"},
}
FULL = {"img": 10_000, "tokens": 100_000, "text": 200_000}
QUICK = {"img": 1_000, "tokens": 10_000, "text": 20_000}
# Targets from issue 12: streamx over the best peer (tokens, text) or over mosaic (img).
TARGETS = {"img": 1.5, "tokens": 3.0, "text": 3.0}


def make_samples(workload: str, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """Deterministic samples drawn from pools (the pools keep generation out of the way)."""
    rng = np.random.default_rng(seed)
    if workload == "img":
        blobs = [rng.bytes(int(rng.integers(90_000, 110_001))) for _ in range(64)]
        return [{"data": blobs[i % len(blobs)], "label": i} for i in range(n)]
    if workload == "tokens":
        arrays = [rng.integers(0, 50_257, 2048, dtype=np.uint32) for _ in range(512)]
        return [{"tokens": arrays[i % len(arrays)]} for i in range(n)]
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ", np.uint8)
    pool = letters[rng.integers(0, len(letters), 1 << 16)].tobytes().decode()
    lengths = rng.integers(50, 401, n).tolist()
    starts = rng.integers(0, (1 << 16) - 400, n).tolist()
    return [{"id": i, "text": pool[s : s + k]} for i, (s, k) in enumerate(zip(starts, lengths))]


def _write_mds(module: Any, spec: dict[str, Any], samples: list[dict[str, Any]]) -> None:
    compression = None if spec["compression"] == "none" else spec["compression"]
    with module.MDSWriter(
        out=spec["dir"],
        columns=COLUMNS[spec["workload"]],
        size_limit=SHARD,
        compression=compression,
    ) as writer:
        for sample in samples:
            writer.write(sample)


def _write_litdata(spec: dict[str, Any], samples: list[dict[str, Any]]) -> None:
    from litdata.streaming.writer import BinaryWriter

    zstd = spec["compression"] != "none"
    writer = BinaryWriter(
        spec["dir"],
        chunk_bytes=SHARD,
        compression="zstd" if zstd else None,
        compression_level="chunk" if zstd else None,
    )
    for i, sample in enumerate(samples):
        writer.add_item(i, sample)
    writer.done()
    writer.merge()


def do_write(spec: dict[str, Any]) -> dict[str, Any]:
    """Times one library writing one workload; returns seconds and CPU seconds."""
    samples = make_samples(spec["workload"], spec["n"])
    if spec["lib"] == "litdata":
        import litdata  # noqa: F401  (imported before the clock starts, like the others)

        seconds, cpu, _ = timed_cpu(lambda: _write_litdata(spec, samples))
    elif spec["lib"] == "webdataset":
        import webdataset  # noqa: F401  (imported before the clock starts, like the others)

        write = wds_peer.write
        seconds, cpu, _ = timed_cpu(
            lambda: write(spec["dir"], spec["workload"], iter(samples), SHARD)
        )
    else:
        module: Any = __import__(spec["lib"])
        if spec["lib"] == "streaming":
            from streaming.base.util import clean_stale_shared_memory

            clean_stale_shared_memory()
        seconds, cpu, _ = timed_cpu(lambda: _write_mds(module, spec, samples))
    return {"seconds": seconds, "cpu": cpu}


def _litdata_count(path: Path) -> int:
    index = json.loads((path / "index.json").read_text())
    return sum(chunk["chunk_size"] for chunk in index["chunks"])


def _wds_count(path: Path, workload: str) -> int:
    """Samples in the tar shards of ``path``: members holding the workload's first field."""
    import tarfile

    field, ext = next(iter(wds_peer.EXTENSIONS[workload].items()))
    count = 0
    for shard in sorted(path.glob("*.tar")):
        with tarfile.open(shard) as tar:
            count += sum(name.endswith(f".{field}.{ext}") for name in tar.getnames())
    return count


def _disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def measure(workload: str, compression: str, n: int, repeat: int, root: Path) -> dict[str, Any]:
    """Writes ``n`` samples ``repeat`` times with each library, interleaved; one table row."""
    libs = LIBS + RAW_ONLY if compression == "none" else LIBS
    times: dict[str, list[float]] = {lib: [] for lib in libs}
    cpus: dict[str, list[float]] = {lib: [] for lib in libs}
    correct = True
    for _ in range(repeat):
        dirs = {lib: root / f"{lib}-{workload}-{compression}" for lib in libs}
        for lib in libs:
            shutil.rmtree(dirs[lib], ignore_errors=True)
            spec = {
                "lib": lib,
                "workload": workload,
                "compression": compression,
                "n": n,
                "dir": str(dirs[lib]),
            }
            result = run_worker(SCRIPT, spec)
            times[lib].append(result["seconds"])
            cpus[lib].append(result["cpu"])
        correct &= same_files(dirs["streamx"], dirs["streaming"])
        correct &= _litdata_count(dirs["litdata"]) == n
        if "webdataset" in dirs:
            correct &= _wds_count(dirs["webdataset"], workload) == n
        megabytes = _disk_bytes(dirs["streamx"]) / 1e6
        for path in dirs.values():
            shutil.rmtree(path, ignore_errors=True)
    sps = {lib: n / statistics.median(times[lib]) for lib in libs}
    best_peer = max(v for lib, v in sps.items() if lib != "streamx")
    peer = sps["streaming"] if workload == "img" else best_peer
    return {
        "workload": workload,
        "compression": compression,
        "samples": n,
        "mb": megabytes,
        **{f"{lib}_sps": sps[lib] for lib in libs},
        "streamx_mbps": megabytes * sps["streamx"] / n,
        "vs_streaming": sps["streamx"] / sps["streaming"],
        "vs_litdata": sps["streamx"] / sps["litdata"],
        "vs_webdataset": sps["streamx"] / sps["webdataset"] if "webdataset" in sps else None,
        "vs_target_peer": sps["streamx"] / peer,
        "target": TARGETS[workload],
        "cpu_vs_streaming": statistics.median(cpus["streaming"])
        / statistics.median(cpus["streamx"]),
        "correct": correct,
        "runs": {lib: times[lib] for lib in libs},
        "loadavg": os.getloadavg(),
    }


COLUMNS_OUT = [
    ("workload", "workload", ""),
    ("compression", "compression", ""),
    ("samples", "samples", ",d"),
    ("streamx_sps", "streamx samples/s", ",.0f"),
    ("streaming_sps", "mosaic samples/s", ",.0f"),
    ("litdata_sps", "LitData samples/s", ",.0f"),
    ("webdataset_sps", "WebDataset samples/s", ",.0f"),
    ("streamx_mbps", "streamx MB/s", ",.0f"),
    ("vs_streaming", "vs mosaic", ".2f"),
    ("vs_litdata", "vs LitData", ".2f"),
    ("vs_webdataset", "vs WebDataset", ".2f"),
    ("vs_target_peer", "vs target peer", ".2f"),
    ("target", "target", ".1f"),
    ("cpu_vs_streaming", "CPU vs mosaic", ".2f"),
    ("correct", "correct", ""),
]


def main(argv: list[str]) -> None:
    """Runs every measurement, prints the table and writes ``results/write-*.json``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="img,tokens,text")
    parser.add_argument("--compression", default="none,zstd")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    info = machine()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-write-") as tmp:
        for compression in args.compression.split(","):
            for workload in args.only.split(","):
                row = measure(workload, compression, sizes[workload], args.repeat, Path(tmp))
                rows.append(row)
                print(format_table([row], COLUMNS_OUT), flush=True)
    print()
    print(format_table(rows, COLUMNS_OUT))
    info["loadavg_at_end"] = os.getloadavg()
    print(f"\nload average: start {info['loadavg_at_start']}, end {info['loadavg_at_end']}")
    print(f"results: {write_results('write', {'machine': info, 'rows': rows})}")


if __name__ == "__main__":
    if not worker_main(sys.argv[1:], do_write):
        main(sys.argv[1:])
