"""What the tests of how Rust takes a throttled answer share, over plain HTTP
(``test_rust_plain_answers.py``) and over TLS (``test_rust_tls_answers.py``): two small files
to serve, and one ranged GET of a whole file, with no retries."""

from __future__ import annotations

import os
import time
from pathlib import Path

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
