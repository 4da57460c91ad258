"""The main job: write a dataset, serve it from an S3-compatible server on loopback, and stream
it through a DataLoader, printing what happened. Run with ``python -m streamx.demo``.

The server is moto's in-process S3 server bound to 127.0.0.1; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import time
from typing import Any

import numpy as np

__all__ = ["main"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_s3() -> Any:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no per-request lines
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update(
        S3_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_ACCESS_KEY_ID="demo",
        AWS_SECRET_ACCESS_KEY="demo",
        AWS_DEFAULT_REGION="us-east-1",
    )
    import boto3

    boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"]).create_bucket(Bucket="demo")
    return server


def _write(local: str, remote: str, num_samples: int) -> float:
    from streamx import MDSWriter

    rng = np.random.default_rng(0)
    columns = {"id": "int", "text": "str", "tokens": "ndarray:int32:128"}
    start = time.perf_counter()
    with MDSWriter(
        out=(local, remote), columns=columns, compression="zstd", hashes=["xxh64"], size_limit="1mb"
    ) as writer:
        for i in range(num_samples):
            tokens = rng.integers(0, 50_000, 128, dtype=np.int32)
            writer.write(
                {"id": i, "text": f"sample {i}: " + "lorem ipsum " * (i % 7), "tokens": tokens}
            )
    return time.perf_counter() - start


def _collate(batch: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    return {
        "id": torch.tensor([s["id"] for s in batch]),
        "tokens": torch.from_numpy(np.stack([s["tokens"] for s in batch])),
    }


def _stream(remote: str, cache: str, num_samples: int, workers: int) -> None:
    from streamx import StreamingDataset
    from streamx.torch.dataloader import StreamingDataLoader

    dataset = StreamingDataset(
        remote=remote, local=cache, batch_size=64, shuffle=True, validate_hash="xxh64"
    )
    loader = StreamingDataLoader(dataset, batch_size=64, num_workers=workers, collate_fn=_collate)
    start = time.perf_counter()
    first_batch = None
    seen: list[int] = []
    for batch in loader:
        if first_batch is None:
            first_batch = time.perf_counter() - start
        seen += batch["id"].tolist()
    elapsed = time.perf_counter() - start
    assert sorted(seen) == list(range(num_samples)), "every sample exactly once"
    print(
        f"  streamed {len(seen)} samples in {elapsed:.2f} s: {len(seen) / elapsed:,.0f} samples/s"
    )
    print(f"  time to first batch: {first_batch:.3f} s (cold cache, {workers} DataLoader workers)")
    print(f"  first ids of the shuffled epoch: {seen[:8]}")
    print(f"  every sample seen exactly once: yes; resumable state: {loader.state_dict()}")


def main(argv: list[str] | None = None) -> None:
    """Runs the demo end to end."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    server = _start_s3()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            remote = "s3://demo/dataset"
            print(f"S3-compatible server on {os.environ['S3_ENDPOINT_URL']}")
            seconds = _write(os.path.join(tmp, "written"), remote, args.samples)
            rate = args.samples / seconds
            print(f"wrote {args.samples} samples to {remote} in {seconds:.2f} s ({rate:,.0f}/s)")
            print("streaming it through a StreamingDataLoader:")
            _stream(remote, os.path.join(tmp, "cache"), args.samples, args.workers)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
