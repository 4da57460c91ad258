"""What streamx adds over HTTPS, counted from nginx's TLS log: every GET of a file, the one
that pins its version included, goes over the Rust TLS sessions (no second TLS stack with
its own handshakes); sessions carry many files; a process's later connections resume the
session its first ones made; and AES-128-GCM is asked for first."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from https_certs import Certs, trust_test_ca
from nginx_server import Nginx, find_nginx

from streamx import _core
from streamx.exceptions import ObjectChangedError
from streamx.storage import download, http_pool
from streamx.storage.download import download_file

pytestmark = [
    pytest.mark.remote,
    pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed"),
]

SIZE = 1 << 20
PART = 64 << 10  # 16 parts a file
CONNECTIONS = 4


@pytest.fixture
def certs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Certs]:
    found = trust_test_ca(tmp_path, monkeypatch)
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(PART))
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", str(CONNECTIONS))
    monkeypatch.setattr(download, "_LOCAL_SLOTS", {})  # built with the variable above
    http_pool._close_all()  # no session kept from another test's server
    yield found
    http_pool._close_all()


def _files(root: Path, count: int) -> dict[str, bytes]:
    data = {f"f{number}.bin": random.randbytes(SIZE) for number in range(count)}
    for name, body in data.items():
        (root / name).write_bytes(body)
    return data


def test_parts_and_files_share_resumed_rust_sessions(tmp_path: Path, certs: Certs) -> None:
    root = tmp_path / "root"
    root.mkdir()
    data = _files(root, 4)
    moved = _core.tls_bodies_moved()
    with Nginx(root, tls=(certs.chain, certs.key)) as nginx:
        for name in ("f0.bin", "f1.bin", "f2.bin"):
            dest = tmp_path / "cache" / name
            download_file(f"{nginx.endpoint}/{name}", str(dest), timeout=30, expected_size=SIZE)
            assert dest.read_bytes() == data[name]
        gets = len(nginx.log_when(lambda log: len(log) >= 48))
        first = [entry for entry in nginx.tls_log() if entry.requests == 1]
        # Every GET's body came through rustls, the first part of each file included.
        assert _core.tls_bodies_moved() - moved == gets == 48
        # One handshake per connection, and connections carried the three files.
        assert len(first) <= CONNECTIONS
        assert all("AES128-GCM" in e.cipher or "AES_128_GCM" in e.cipher for e in first)
        # New connections of the same process resume the session the first ones made.
        http_pool._close_all()
        seen = len(nginx.tls_log())
        download_file(f"{nginx.endpoint}/f3.bin", str(tmp_path / "f3"), expected_size=SIZE)
        again = [entry for entry in nginx.tls_log()[seen:] if entry.requests == 1]
    assert (tmp_path / "f3").read_bytes() == data["f3.bin"]
    assert again and all(entry.resumed for entry in again)


def test_the_version_learnt_over_rust_tls_pins_the_other_parts(
    tmp_path: Path, certs: Certs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is replaced once its first part is in (one connection, so parts go one after
    another): the ETag that part's answer gave, read by the Rust session, goes out as the
    next part's If-Match, and nginx answers 412."""
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "1")
    monkeypatch.setattr(download, "_LOCAL_SLOTS", {})
    root = tmp_path / "root"
    root.mkdir()
    served = root / "f.bin"
    served.write_bytes(random.randbytes(SIZE))
    replaced: list[int] = []
    moved = _core.tls_bodies_moved()

    def replace(_tmp: str, done: int) -> None:
        if not replaced:
            spare = root / "spare"
            spare.write_bytes(random.randbytes(SIZE))
            stat = served.stat()
            os.utime(spare, (stat.st_atime + 60, stat.st_mtime + 60))  # nginx's ETag: mtime
            os.replace(spare, served)
            replaced.append(done)

    dest = tmp_path / "cache" / "f.bin"
    with Nginx(root, tls=(certs.chain, certs.key)) as nginx:
        url = f"{nginx.endpoint}/f.bin"
        with pytest.raises(ObjectChangedError, match="HTTP 412"):
            download_file(url, str(dest), retry=2, timeout=30, expected_size=SIZE, progress=replace)
        log = nginx.log_when(lambda log: any(entry.status == 412 for entry in log))
    assert replaced == [PART]
    assert log[0].status == 206 and _core.tls_bodies_moved() - moved >= 1
    assert 412 in [entry.status for entry in log]
    assert not dest.exists()
