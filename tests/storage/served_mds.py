"""An MDS dataset written under the root nginx serves, for the tests that read it back over
HTTP (written once here: each test only picks its shape)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx

import streamx


def write_served(
    tmp_path: Path, name: str, samples: int, sample_bytes: int, size_limit: int
) -> Path:
    """Writes `samples` samples (an ``int`` id and `sample_bytes` bytes) into
    ``served/bucket/<name>`` in shards of at most `size_limit` bytes; returns ``served``,
    nginx's root. Skips the test where nginx is not installed."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make test installs it)")
    out = tmp_path / "served" / "bucket" / name
    with streamx.MDSWriter(
        out=str(out), columns={"i": "int", "x": "bytes"}, size_limit=size_limit
    ) as writer:
        for i in range(samples):
            writer.write({"i": i, "x": bytes([i % 251]) * sample_bytes})
    return tmp_path / "served"


def requested_files(server: Nginx) -> set[str]:
    """The file names `server` has answered a GET for, from its access log."""
    return {e.uri.rsplit("/", 1)[-1] for e in server.log() if e.method == "GET"}


def wait_for_request(server: Nginx, name: str, seconds: float) -> bool:
    """Whether `server` is asked for the file `name` within `seconds` (polled, since the
    loader fetches ahead on its own threads)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if name in requested_files(server):
            return True
        time.sleep(0.02)
    return False
