"""A range reader copies a download's landed parts only of the version it pinned itself.

A partial reads a shard's header by range GET (pinning its ``ETag``); then the object is
rewritten (same size, other bytes) and a download, in another process, lands every part of
the new version in its temporary file and is killed there (``SIGKILL``), its record left
published. The reader must not copy those bytes into a partial whose offsets came from the
old version: it reads by range with its own pin, the server answers ``412``, and the error
names the shard (the reader then waits for the shard's file). Before, the record carried no
version and the new version's bytes were copied in silently. A download of the version the
reader pinned is copied from, with no GET.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest
from bounded import BOUND_S
from scripted_http import Request, ScriptedServer, serve_bytes

import streamx
from streamx.cache.range_formats import range_format
from streamx.cache.range_partial import Partial, Target
from streamx.exceptions import ObjectChangedError
from streamx.format.index import parse_index
from streamx.storage import http_pool

pytestmark = pytest.mark.remote

SAMPLES = 40
SAMPLE_BYTES = 20_000
PART = 64 << 10
SHARD = "shard.00000.mds"

# The owner of the download: every part lands, then it is killed before the rename (its
# record and temporary file stay, as a download in progress's would).
_KILLED_ONCE_LANDED = """
import os, signal, sys
from streamx.storage.download import download_file
from streamx.storage.landed_parts import LandedRecord

size = int(sys.argv[3])
done = LandedRecord.done

def landed(record, start, *version):
    done(record, start, *version)
    if record._spans == [(0, size)]:
        os.kill(os.getpid(), signal.SIGKILL)

LandedRecord.done = landed
download_file(sys.argv[1], sys.argv[2], expected_size=size)
"""


def _written(out: Path, first: int) -> bytes:
    """One shard of ``SAMPLES`` samples whose bytes start at ``first``; its bytes."""
    with streamx.MDSWriter(out=str(out), columns={"i": "int", "x": "bytes"}) as writer:
        for i in range(SAMPLES):
            writer.write({"i": i, "x": bytes([(first + i) % 251]) * SAMPLE_BYTES})
    return (out / SHARD).read_bytes()


class _Object:
    """The served shard: its bytes and ETag, rewritten by the test."""

    def __init__(self, data: bytes, etag: str) -> None:
        self.data, self.etag = data, etag

    def answer(self, request: Request, handler: BaseHTTPRequestHandler) -> None:
        serve_bytes(handler, request, self.data, etag=self.etag)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ScriptedServer, _Object, Path, bytes, bytes]]:
    old, new = _written(tmp_path / "v1", 0), _written(tmp_path / "v2", 100)
    assert len(old) == len(new) and old != new
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(tmp_path / "v1" / "index.json", cache / "index.json")
    served = _Object(old, '"v1"')
    http_pool._close_all()
    with ScriptedServer(served.answer) as server:
        yield server, served, cache, old, new
    http_pool._close_all()


def _partial(server: ScriptedServer, cache: Path) -> Partial:
    shard = parse_index(str(cache), None, str(cache / "index.json"))[0]
    form = range_format(shard)
    assert form is not None
    index = str(cache / "index.json")
    return Partial(Target(shard, server.url(f"/{SHARD}"), index, 10.0, 1, form), False)


def _download_killed_once_landed(url: str, cache: Path, size: int) -> None:
    child = [sys.executable, "-c", _KILLED_ONCE_LANDED, url, str(cache / SHARD), str(size)]
    env = {**os.environ, "STREAMX_DOWNLOAD_PART_SIZE": str(PART)}
    assert subprocess.run(child, env=env, timeout=BOUND_S).returncode == -signal.SIGKILL
    assert not (cache / SHARD).exists()
    assert [p.name.endswith(".parts") for p in cache.glob(f".{SHARD}.*.parts")] == [True]


def test_parts_of_another_version_are_not_copied_into_a_pinned_reader(
    served: tuple[ScriptedServer, _Object, Path, bytes, bytes],
) -> None:
    server, obj, cache, _, new = served
    partial = _partial(server, cache)  # the header by range: pinned to "v1"
    try:
        obj.data, obj.etag = new, '"v2"'  # rewritten between the two reads
        _download_killed_once_landed(server.url(f"/{SHARD}"), cache, len(new))
        with pytest.raises(ObjectChangedError, match=SHARD):
            partial.fetch(np.arange(SAMPLES, dtype=np.int64), past_budget=True)
        # No sample of the new version's bytes was taken into the old version's partial.
        assert not partial.fetched.any()
    finally:
        partial.close()
    asked = [r.headers.get("if-match") for r in server.requests if r.method == "GET"]
    assert asked[-1] == '"v1"'  # the reader's own pin, refused with a 412


def test_parts_of_the_readers_version_are_copied_without_a_get(
    served: tuple[ScriptedServer, _Object, Path, bytes, bytes],
) -> None:
    server, _, cache, old, _ = served
    partial = _partial(server, cache)
    try:
        _download_killed_once_landed(server.url(f"/{SHARD}"), cache, len(old))
        gets = server.count()
        assert partial.fetch(np.arange(SAMPLES, dtype=np.int64), past_budget=True)
        assert server.count() == gets  # every sample copied from the landed parts
        for i in range(SAMPLES):
            assert partial.sample(i)["x"] == bytes([i % 251]) * SAMPLE_BYTES
    finally:
        partial.close()
