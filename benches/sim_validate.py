"""``bench_sim.py --validate``: a calibrated prediction against a measured run.

A dataset of 40 shards (4 MB each, 100 samples of 40 KB) is served by nginx
(``tests/storage/nginx_server``) as an S3 endpoint with each connection capped at
``--rate`` (default 16m). Calibration: the real ``streamx bench`` at the measured run's
worker count (its rates and, from a warm cache, the DataLoader's start-up to the first
batch). Measured run: one process iterates ``StreamingDataset(remote=s3://...,
batch_size=16, shuffle=True)`` and sleeps ``16 * 0.004`` s per batch (the "model"), timed
end to end, bytes from ``streamx.runtime.metrics``. Prediction: ``streamx.sim`` with one
node, one device, the run's workers, the same batch and time per sample, ``--calibrate``'d
as the CLI does (the loader's cost per sample and per byte downloaded beside it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import S3_BENCH_ENV
from streamx.sim import SimConfig, SimStream, load_shards, simulate


def validate(rate: str, workers: int = 0) -> None:
    sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "storage"))
    from nginx_server import Nginx

    from streamx import MDSWriter, StreamingDataset
    from streamx.runtime import metrics
    from streamx.sim.calibrate import (
        loader_time_per_byte,
        loader_time_per_sample,
        read_calibration,
    )

    batch, tps = 16, 0.004
    os.environ.update(S3_BENCH_ENV)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "bucket" / "ds"
        with MDSWriter(out=str(data), columns={"x": "bytes"}, size_limit=4_000_000) as w:
            for i in range(4000):
                w.write({"x": bytes([i % 251]) * 39_950})
        index = json.loads((data / "index.json").read_text())
        names = [s["raw_data"]["basename"] for s in index["shards"]]
        with Nginx(Path(tmp), limit_rate=rate) as server:
            os.environ["S3_ENDPOINT_URL"] = server.endpoint
            bench = Path(tmp) / "bench.json"
            # The real `streamx bench`, in its own process, at the loader's connection count.
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "streamx",
                    "bench",
                    "s3://bucket/ds",
                    "--shards",
                    "8",
                    "--samples",
                    "200",
                    "-w",
                    str(workers),
                    "-b",
                    str(batch),
                    "--out",
                    str(bench),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            before = metrics.snapshot()["bytes_downloaded"]
            ds = StreamingDataset(
                remote="s3://bucket/ds", local=f"{tmp}/cache", batch_size=batch, shuffle=True
            )
            began = time.perf_counter()
            first = 0.0
            if workers:
                from torch.utils.data import DataLoader

                # Timed from the loader's creation: its workers' start-up is the run's too.
                loader = DataLoader(ds, batch_size=batch, num_workers=workers, collate_fn=list)
                for _ in loader:
                    first = first or time.perf_counter() - began
                    time.sleep(batch * tps)
            else:
                for got, _ in enumerate(ds, 1):
                    if got % batch == 0:
                        first = first or time.perf_counter() - began
                        time.sleep(batch * tps)
            measured = time.perf_counter() - began
            measured_bytes = metrics.snapshot()["bytes_downloaded"] - before
        cal = read_calibration(str(bench))
        cfg = SimConfig(
            (SimStream(load_shards(str(data))),),
            nodes=1,
            devices=1,
            workers=workers,
            batch_size=batch,
            time_per_sample=tps,
            loader_time_per_sample=loader_time_per_sample(cal),
            loader_time_per_byte=loader_time_per_byte(cal),
            bandwidth=cal["bandwidth"],
            shard_bandwidth=cal["shard_bandwidth"],
            startup_time=cal["startup_time"],
            shuffle=True,
        )
        predicted = simulate(cfg).summary()
    print(
        f"| {len(names)} shards, {rate}/connection, {workers} workers, calibrated "
        f"{cal['connections']} connections {cal['bandwidth'] / 1e6:.1f} MB/s, one shard "
        f"{(cal['shard_bandwidth'] or 0) / 1e6:.1f} MB/s | {measured:.2f} s, first batch "
        f"{first:.2f} s, {measured_bytes / 1e6:.1f} MB | {predicted['total_time']:.2f} s, "
        f"first batch {predicted['time_to_first_batch']:.2f} s, "
        f"{predicted['bytes_downloaded'] / 1e6:.1f} MB | "
        f"{100 * (predicted['total_time'] - measured) / measured:+.1f}% | "
        f"{100 * (predicted['time_to_first_batch'] - first) / max(first, 1e-9):+.1f}% | "
        f"{100 * (predicted['bytes_downloaded'] / max(measured_bytes, 1) - 1):+.1f}% |",
        flush=True,
    )
