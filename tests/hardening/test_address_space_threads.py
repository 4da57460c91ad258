"""An epoch under a 4 GiB address-space limit (``ulimit -v``), with torch imported as a
training script has it: a large shard's parallel parts want more download threads than the
limit leaves room for (each reserves a stack and a malloc arena). mosaicml-streaming runs
there; streamx used to fail with "can't start new thread". It now runs with the threads it
could start."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest

import streamx

LIMIT = 4 << 30
SAMPLES, SAMPLE_BYTES = 128, 1 << 20  # one 128 MiB shard: 64 parts of 2 MiB


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    out = tmp_path / "root" / "ds"
    columns = {"id": "int", "data": "bytes"}
    with streamx.MDSWriter(out=str(out), columns=columns, size_limit=1 << 28) as writer:
        for i in range(SAMPLES):
            writer.write({"id": i, "data": bytes([i]) * SAMPLE_BYTES})
    # Slow connections keep many parts in flight at once, each on a thread of its own.
    with Nginx(tmp_path / "root", limit_rate="20m") as server:
        yield f"{server.endpoint}/ds"


def test_an_epoch_runs_under_a_4_gib_address_space_limit(served: str, tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import resource
        import torch  # noqa: F401  (its reservations count against the limit, as in training)
        import streamx
        resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))
        ds = streamx.StreamingDataset(remote={served!r}, local={str(tmp_path / "cache")!r},
                                      batch_size=1)
        good = sum(
            s["data"] == bytes([int(s["id"])]) * {SAMPLE_BYTES} for s in ds
        )
        print("good", good)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["good", str(SAMPLES)]
    assert "can't start new thread" not in run.stderr
