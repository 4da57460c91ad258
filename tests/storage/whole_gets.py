"""What the tests of how Rust takes a throttled answer share, over plain HTTP
(``test_rust_plain_answers.py``) and over TLS (``test_rust_tls_answers.py``): two small files
to serve, one ranged GET of a whole file, with no retries, and the scenario of a throttled
answer whose page is read so its connection carries the next GET."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from nginx_server import Nginx

from streamx.exceptions import HttpResponseError
from streamx.storage import throttle
from streamx.storage.http_get import get_into
from streamx.storage.http_source import plain_target

SIZE = 100_000


def write_files(root: Path) -> None:
    """``f0`` and ``f1``, ``SIZE`` bytes each, in a new ``root``."""
    root.mkdir()
    for number in range(2):
        (root / f"f{number}").write_bytes(bytes([number]) * SIZE)


def get_whole(url: str, dest: Path) -> None:
    """One ranged GET of the whole file, no retries (a 503 raises)."""
    target = plain_target(url)
    assert target is not None
    fd = os.open(dest, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        get_into(target, fd, 0, SIZE, timeout=10, deadline=time.monotonic() + 10)
    finally:
        os.close(fd)


def a_throttled_answer_keeps_its_connection(
    tmp_path: Path, tls: tuple[Path, Path] | None = None
) -> None:
    """``f0`` (206), then ``f1`` within the store's second (503), then ``f1`` once its
    ``Retry-After`` is waited out (206), over plain HTTP or, given ``tls`` (chain, key), over
    TLS. The 503's page is read, so its ``Retry-After`` is kept, the host's GETs stay on Rust,
    and one connection carries all three. The caller checks how the bodies were moved."""
    write_files(tmp_path / "root")
    with Nginx(tmp_path / "root", tls=tls, limit_req="1r/s") as nginx:
        get_whole(f"{nginx.endpoint}/f0", tmp_path / "f0")
        with pytest.raises(HttpResponseError) as refused:  # within the store's second
            get_whole(f"{nginx.endpoint}/f1", tmp_path / "f1")
        assert refused.value.status == 503
        assert throttle.retry_after_of(refused.value) == 1.0  # nginx's Retry-After: 1
        # The host's GETs stay on Rust: its answers' headers are read there now.
        assert not throttle.headers_wanted("127.0.0.1", nginx.port)
        time.sleep(1.1)  # the Retry-After waited out
        get_whole(f"{nginx.endpoint}/f1", tmp_path / "f1")
        log = nginx.log_when(lambda entries: len(entries) >= 3)
    assert (tmp_path / "f1").read_bytes() == bytes([1]) * SIZE
    assert [entry.status for entry in log] == [206, 503, 206]
    # One connection carried all three: the 503's page was read, so it went back.
    assert {entry.connection for entry in log} == {log[0].connection}
