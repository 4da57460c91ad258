"""HTTPS bodies that go wrong, over the Rust TLS path, with a certificate the test makes:
a connection dropped mid-body (no ``close_notify``), a short body ended cleanly, an
oversized body and a stalled one fail as over plain HTTP, and never write past the bytes
asked for."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_tls import HostileTlsServer, hostile_servers
from https_certs import trust_test_ca

from streamx import _core
from streamx.exceptions import TruncatedDownloadError
from streamx.storage.http_get import PlainHttp, get_into

_DATA = os.urandom(3_000_000)


@pytest.fixture
def server_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    certs = trust_test_ca(tmp_path, monkeypatch, ("AWS_CA_BUNDLE",))
    with hostile_servers(_DATA, certs.chain, certs.key) as start:
        yield start


def _get(server: HostileTlsServer, path: Path, length: int | None, seconds: float = 20) -> int:
    target = PlainHttp(server.url(), "https", "127.0.0.1", server.port, "/obj.bin")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        start = 0 if length is None else 1000
        return get_into(target, fd, start, length, timeout=5, deadline=time.monotonic() + seconds)
    finally:
        os.close(fd)


@pytest.mark.parametrize("mode", ["drop", "short"])
@pytest.mark.parametrize("length", [None, 1_000_000])
def test_a_body_cut_mid_way_is_truncated(
    server_for: object, tmp_path: Path, mode: str, length: int | None
) -> None:
    server = server_for(mode)  # type: ignore[operator]
    out = tmp_path / "out"
    with pytest.raises(TruncatedDownloadError, match="received .* of"):
        _get(server, out, length)
    asked = len(_DATA) if length is None else 1000 + length
    assert out.stat().st_size <= asked
    got = out.read_bytes()
    start = 0 if length is None else 1000
    assert got[start:] == _DATA[start : len(got)]  # what was written is the object's bytes


@pytest.mark.parametrize("length", [None, 1_000_000])
def test_bytes_past_the_announced_body_are_never_written(
    server_for: object, tmp_path: Path, length: int | None
) -> None:
    server = server_for("oversized")  # type: ignore[operator]
    out = tmp_path / "out"
    before = _core.tls_bodies_moved()
    assert _get(server, out, length) == len(_DATA)
    assert _core.tls_bodies_moved() == before + 1
    got = out.read_bytes()
    if length is None:
        assert got == _DATA
    else:
        assert len(got) == 1000 + length
        assert got[1000:] == _DATA[1000 : 1000 + length]


@pytest.mark.parametrize("length", [None, 1_000_000])
def test_a_stalled_body_times_out_within_its_deadline(
    server_for: object, tmp_path: Path, length: int | None
) -> None:
    server = server_for("stall")  # type: ignore[operator]
    out = tmp_path / "out"
    with pytest.raises(TimeoutError, match="ran past its deadline"):
        _get(server, out, length, seconds=1.0)
