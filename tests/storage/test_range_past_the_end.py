"""A part asked for past the end of an object shorter than its index says: the server
answers up to the object's end (RFC 9110), and that is a size error naming the object's
real size, on both GET routes (Rust's ranged exchange, and http.client for a part that
learns the object's version). It used to be a bare "cut body" error when the last part
answered first, which the dataset then could not tell from a network fault (the CI flake
of tests/storage/test_range_reads.py::test_moto_serves_every_sample_of_a_shard_by_range)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from nginx_server import Nginx, find_nginx

from streamx.exceptions import SizeMismatchError
from streamx.storage import http_pool
from streamx.storage.http_get import PlainHttp, get_into
from streamx.storage.object_pin import ObjectPin

pytestmark = pytest.mark.skipif(find_nginx() is None, reason="needs Debian's nginx")

SIZE = 1_000_000
CLAIMED = SIZE + 7  # what a stale index says


@pytest.mark.parametrize("route", ["rust", "http.client"])
def test_a_range_clipped_at_the_end_is_a_size_error(tmp_path: Path, route: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "obj.bin").write_bytes(os.urandom(SIZE))
    http_pool._close_all()
    with Nginx(root) as nginx:
        target = PlainHttp(f"{nginx.endpoint}/obj.bin", "http", "127.0.0.1", nginx.port, "/obj.bin")
        # An unpinned part goes through Rust; the lead of a pinned one through http.client.
        pin = ObjectPin(target.url) if route == "http.client" else None
        start = SIZE - 100
        fd = os.open(tmp_path / "out", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            with pytest.raises(SizeMismatchError, match=f"{SIZE}") as caught:
                get_into(
                    target,
                    fd,
                    start,
                    CLAIMED - start,
                    timeout=5,
                    deadline=time.monotonic() + 20,
                    expected=CLAIMED,
                    pin=pin,
                )
        finally:
            os.close(fd)
    assert caught.value.size == SIZE
    assert target.url in str(caught.value)
    # Nothing past the object's real end was written.
    assert (tmp_path / "out").stat().st_size <= SIZE
