"""Compressed shards from an S3-like server: decompression overlapping the download.

nginx (from the distribution, started here on a free loopback port) serves a bucket
directory, unthrottled and with ``limit_rate 40m`` per connection (as S3 caps each GET).
The tokens workload (``uint32[2048]`` of ids below 50,257, the first token the sample's
id), in 64 MiB shards/chunks compressed with zstd: MDS shards written by
``streamx.MDSWriter`` (read by streamx and mosaicml-streaming 0.13.0), LitData 0.2.76's
chunks by ``litdata.optimize(compression="zstd")``. Each library, in a fresh interpreter
with an empty cache, builds its ``StreamingDataset`` and reads every sample in order in
one process. ``streamx-sequential`` is streamx with the overlap off (a ``Stream``
subclass whose decompression hook is its own, so the shard is decompressed only once
downloaded). Reported: time to the first sample (a compressed shard cannot be read before
it is decompressed) and samples/s over the pass, with ``correct`` (every sample once, in
order, its first token its id).

Usage: ``python benches/bench_unzip.py [--samples N]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from common import S3_BENCH_ENV, format_table, machine, run_worker, worker_main, write_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "storage"))
from nginx_server import Nginx

SCRIPT = Path(__file__).resolve()
SHARD = 64 << 20
LIBS = ("streamx", "streamx-sequential", "litdata", "streaming")


def _tokens(i: int) -> dict[str, Any]:
    tokens = np.random.default_rng(i).integers(0, 50_257, 2048, dtype=np.uint32)
    tokens[0] = i
    return {"tokens": tokens}


def write(spec: dict[str, Any]) -> dict[str, Any]:
    count, out = spec["count"], spec["out"]
    if spec["lib"] == "litdata":
        import litdata

        litdata.optimize(
            fn=_tokens,
            inputs=list(range(count)),
            output_dir=out,
            chunk_bytes=SHARD,
            compression="zstd",
            num_workers=1,
            mode="overwrite",
        )
        return {}
    import streamx

    columns = {"tokens": "ndarray:uint32:2048"}
    with streamx.MDSWriter(out=out, columns=columns, size_limit=SHARD, compression="zstd") as w:
        for i in range(count):
            w.write(_tokens(i))
    return {}


def _dataset(spec: dict[str, Any]) -> Any:
    lib, local = spec["lib"], spec["local"]
    if lib == "litdata":
        import litdata
        from litdata.streaming import downloader
        from litdata.streaming.resolver import Dir

        # LitData's obstore path fails against a plain http endpoint: its boto3 path.
        downloader._OBSTORE_AVAILABLE = False
        return litdata.StreamingDataset(
            Dir(path=local, url="s3://bucket/lit"),
            storage_options={"endpoint_url": spec["endpoint"]},
        )
    remote = "s3://bucket/mds"
    if lib == "streaming":
        import streaming
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
        return streaming.StreamingDataset(remote=remote, local=local, shuffle=False, batch_size=32)
    import streamx

    if lib == "streamx":
        return streamx.StreamingDataset(remote=remote, local=local, shuffle=False, batch_size=32)

    class SequentialStream(streamx.Stream):
        """Decompresses as streamx did before the overlap: once the file is in."""

        def _decompress_shard_part(self, *args: Any, **kwargs: Any) -> None:
            super()._decompress_shard_part(*args, **kwargs)

    stream = SequentialStream(remote=remote, local=local)
    return streamx.StreamingDataset(streams=[stream], shuffle=False, batch_size=32)


def epoch(spec: dict[str, Any]) -> dict[str, Any]:
    import os

    import torch  # noqa: F401  (imported before the clock starts, by every library)

    os.environ.update(S3_BENCH_ENV)
    os.environ["S3_ENDPOINT_URL"] = spec["endpoint"]
    count = spec["count"]
    correct, first, seen = True, None, 0
    start = time.perf_counter()
    for i, sample in enumerate(_dataset(spec)):
        if first is None:
            first = time.perf_counter() - start
        tokens = sample["tokens"]
        correct &= int(tokens[0]) == i and len(tokens) == 2048
        seen += 1
    seconds = time.perf_counter() - start
    correct &= seen == count
    return {"ttfs": first, "sps": count / seconds, "correct": bool(correct)}


def dispatch(spec: dict[str, Any]) -> dict[str, Any]:
    return write(spec) if spec["op"] == "write" else epoch(spec)


COLUMNS = [
    ("server", "server", ""),
    ("streamx_ttfs", "streamx TTFS s", ".2f"),
    ("streamx_sequential_ttfs", "streamx sequential TTFS s", ".2f"),
    ("litdata_ttfs", "LitData TTFS s", ".2f"),
    ("streaming_ttfs", "mosaic TTFS s", ".2f"),
    ("streamx_sps", "streamx samples/s", ",.0f"),
    ("streamx_sequential_sps", "streamx sequential samples/s", ",.0f"),
    ("litdata_sps", "LitData samples/s", ",.0f"),
    ("streaming_sps", "mosaic samples/s", ",.0f"),
    ("vs_litdata", "vs LitData", ".2f"),
    ("vs_streaming", "vs mosaic", ".2f"),
    ("correct", "correct", ""),
]


def main(argv: list[str]) -> int:
    if worker_main(argv, dispatch):
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=32_768)
    args = parser.parse_args(argv)
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        print("bench_unzip: skipped, nginx is not installed (apt-get install -y nginx)")
        return 0
    root = Path(tempfile.mkdtemp(prefix="streamx-unzip-"))
    rows = []
    try:
        for lib, name in (("streamx", "mds"), ("litdata", "lit")):
            spec = {
                "op": "write",
                "lib": lib,
                "count": args.samples,
                "out": str(root / "bucket" / name),
            }
            run_worker(SCRIPT, spec, timeout=3600)
        for limit in (None, "40m"):
            with Nginx(root, limit_rate=limit) as server:
                row: dict[str, Any] = {"server": limit or "unthrottled"}
                for lib in LIBS:
                    local = tempfile.mkdtemp(prefix=f"cache-{lib}-", dir=root)
                    spec = {
                        "op": "epoch",
                        "lib": lib,
                        "count": args.samples,
                        "local": local,
                        "endpoint": server.endpoint,
                    }
                    result = run_worker(SCRIPT, spec, timeout=600)
                    shutil.rmtree(local, ignore_errors=True)
                    key = lib.replace("-", "_")
                    for field in ("ttfs", "sps", "correct"):
                        row[f"{key}_{field}"] = result[field]
                    print(lib, limit, result, flush=True)
                row["vs_litdata"] = row["streamx_sps"] / row["litdata_sps"]
                row["vs_streaming"] = row["streamx_sps"] / row["streaming_sps"]
                row["correct"] = all(row[f"{lib.replace('-', '_')}_correct"] for lib in LIBS)
                rows.append(row)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(format_table(rows, COLUMNS))
    zips = {"samples": args.samples}
    path = write_results("unzip", {"machine": machine(), "params": zips, "rows": rows})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
