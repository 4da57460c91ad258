"""How Rust TLS sessions take the answers that cost an epoch time under a store's limits
(issue 26).

A GET over a Rust TLS session that the store throttles (nginx's ``limit_req`` 503) reads
the answer's short page (issue 26): the connection carries the next request instead of a
new TCP and TLS set-up, the ``Retry-After`` is kept on the error, and the host's GETs stay
on Rust (before, the page was left unread, the connection closed, and the host's GETs went
through ``http.client`` for 30 s to read the next ``Retry-After``). A page too long to read
whole is still left unread, and its connection closed; one that stalls is given up after
two seconds (not at the GET's deadline), its ``Retry-After`` kept.

A file's parts wait for the version its first part's answer pins (their ``If-Match``): over
a Rust TLS session that answer's head now pins it, so the other parts start while the first
part's body is still coming (before, they waited for its whole body: a file's parts ran one
after the other at first)."""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from https_certs import Certs, make_certs
from nginx_server import Nginx, find_nginx, max_overlap
from whole_gets import (
    SIZE,
    a_stalled_page_is_given_up,
    a_throttled_answer_keeps_its_connection,
    get_whole,
    write_files,
)

from streamx import _core
from streamx.exceptions import HttpResponseError
from streamx.storage import download, http_pool, throttle
from streamx.storage.download import download_file

pytestmark = [
    pytest.mark.remote,
    pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed"),
]

# A 503 page over the 64 KiB Rust reads whole (nginx serves it for limit_req's refusals).
LONG_PAGE = 100_000
MIB = 1 << 20


@pytest.fixture
def certs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Certs]:
    for name in ("AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "SSL_CERT_DIR", "STREAMX_RUST_TLS"):
        monkeypatch.delenv(name, raising=False)
    found = make_certs(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(found.ca))
    monkeypatch.setattr(download, "_LOCAL_SLOTS", {})
    http_pool._close_all()
    throttle.forget_hosts()
    yield found
    http_pool._close_all()
    throttle.forget_hosts()


def test_a_throttled_answer_read_by_rust_keeps_its_connection_and_retry_after(
    tmp_path: Path, certs: Certs
) -> None:
    moved = _core.tls_bodies_moved()
    a_throttled_answer_keeps_its_connection(tmp_path, tls=(certs.chain, certs.key))
    assert _core.tls_bodies_moved() - moved == 2  # the 206s' bodies, through Rust


def test_a_throttled_download_retries_on_the_same_rust_session(
    tmp_path: Path, certs: Certs
) -> None:
    write_files(tmp_path / "root")
    with Nginx(tmp_path / "root", tls=(certs.chain, certs.key), limit_req="1r/s") as nginx:
        moved = _core.tls_bodies_moved()
        for number in range(2):  # the second comes within the store's second: refused once
            dest = tmp_path / "cache" / f"f{number}"
            download_file(f"{nginx.endpoint}/f{number}", str(dest), expected_size=SIZE)
            assert dest.read_bytes() == bytes([number]) * SIZE
        log = nginx.log_when(lambda entries: len(entries) >= 3)
    statuses = [entry.status for entry in log]
    assert statuses[0] == 200 and statuses[-1] == 200 and 503 in statuses
    assert _core.tls_bodies_moved() - moved == 2  # both bodies through Rust, none http.client
    assert {entry.connection for entry in log} == {log[0].connection}


def test_a_throttled_answer_with_a_long_page_is_left_unread(tmp_path: Path, certs: Certs) -> None:
    write_files(tmp_path / "root")
    (tmp_path / "root" / "busy.html").write_bytes(b"b" * LONG_PAGE)
    # limit_req's refusal served from a page over the bound Rust reads whole.
    page = "error_page 503 /busy.html;"
    with Nginx(
        tmp_path / "root", tls=(certs.chain, certs.key), limit_req="1r/s", locations=page
    ) as nginx:
        get_whole(f"{nginx.endpoint}/f0", tmp_path / "f0")
        with pytest.raises(HttpResponseError) as refused:
            get_whole(f"{nginx.endpoint}/f1", tmp_path / "f1")
        assert refused.value.status == 503
        assert throttle.retry_after_of(refused.value) is None  # its headers were not kept
        # So the host's next answers are read through http.client, for their Retry-After.
        assert throttle.headers_wanted("127.0.0.1", nginx.port)
        time.sleep(1.1)
        get_whole(f"{nginx.endpoint}/f1", tmp_path / "f1")
        log = nginx.log_when(lambda entries: len(entries) >= 3)
    # (nginx logs the page's bytes it sent before the connection closed: not all of them.)
    assert [entry.status for entry in log] == [206, 503, 206]
    # The refused request's connection was closed: the next came on another.
    assert log[1].connection == log[0].connection
    assert log[2].connection != log[1].connection


def test_a_files_parts_start_while_its_first_parts_body_comes(
    tmp_path: Path, certs: Certs, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    data = os.urandom(4 * MIB)
    (root / "shard").write_bytes(data)
    monkeypatch.setenv("STREAMX_DOWNLOAD_PART_SIZE", str(MIB))
    # At 2 MB/s per connection each 1 MiB part's body takes half a second.
    with Nginx(root, tls=(certs.chain, certs.key), limit_rate="2m") as nginx:
        moved = _core.tls_bodies_moved()
        dest = tmp_path / "cache" / "shard"
        download_file(f"{nginx.endpoint}/shard", str(dest), expected_size=len(data))
        log = nginx.log_when(lambda entries: len(entries) >= 4)
    assert dest.read_bytes() == data
    assert _core.tls_bodies_moved() - moved == 4  # every part over a Rust TLS session
    assert sorted(entry.sent for entry in log) == [MIB] * 4
    # All four were served at once: the three that waited for the first's version went
    # once its head came, not once its body had (then at most three were at once).
    assert max_overlap(log) == 4


def test_a_stalled_page_is_given_up_long_before_the_deadline(tmp_path: Path, certs: Certs) -> None:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certs.chain, certs.key)
    moved = _core.tls_bodies_moved()
    a_stalled_page_is_given_up(tmp_path, tls)
    assert _core.tls_bodies_moved() - moved == 1  # the 206's body, through Rust
