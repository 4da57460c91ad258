"""A StreamingDataset streams an MDS dataset from an ``https://`` remote served by nginx
with a certificate signed by a CA the test makes; every sample arrives correct, and the
shards came through the Rust TLS path."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from https_certs import trust_test_ca
from nginx_server import Nginx, find_nginx

import streamx
from streamx import _core
from streamx.storage import http_pool

pytestmark = pytest.mark.remote

KIB = 1 << 10


def test_an_https_remote_streams_every_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make test installs it)")
    out = tmp_path / "served" / "ds"
    rng = random.Random(7)
    samples = [{"x": rng.randbytes(rng.randrange(1, 40 * KIB)), "i": i} for i in range(600)]
    with streamx.MDSWriter(
        out=str(out), columns={"x": "bytes", "i": "int"}, size_limit=1 << 20
    ) as writer:
        for sample in samples:
            writer.write(sample)
    (tmp_path / "certs").mkdir()
    certs = trust_test_ca(tmp_path / "certs", monkeypatch, ("AWS_CA_BUNDLE",))
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(256 * KIB))
    http_pool._close_all()
    before = _core.tls_bodies_moved()
    with Nginx(tmp_path / "served", tls=(certs.chain, certs.key)) as server:
        assert server.endpoint.startswith("https://")
        ds = streamx.StreamingDataset(
            remote=f"{server.endpoint}/ds", local=str(tmp_path / "cache"), batch_size=1
        )
        got = [ds[i] for i in range(len(ds))]
        shards = sum(1 for p in out.iterdir() if p.suffix == ".mds")
    http_pool._close_all()
    assert len(got) == len(samples)
    for sample, want in zip(got, samples):
        assert sample["x"] == want["x"] and sample["i"] == want["i"]
    # Every shard's bytes (and the index) went through Rust TLS sessions.
    assert _core.tls_bodies_moved() - before >= shards + 1
