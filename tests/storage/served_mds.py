"""An MDS dataset written under the root nginx serves, for the tests that read it back over
HTTP (written once here: each test only picks its shape)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nginx_server import find_nginx

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
