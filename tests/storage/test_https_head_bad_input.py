"""HEADs over the Rust TLS sessions whose answers go wrong: one cut mid-head, one that is
not HTTP and one that never comes each fail naming the URL."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hostile_tls import HostileTlsServer, hostile_servers
from https_certs import Certs, trust_test_ca

from streamx.exceptions import DownloadTimeoutError
from streamx.storage.http_source import HttpSource, plain_target

_DATA = os.urandom(100_000)
Start = Callable[[str], HostileTlsServer]


@pytest.fixture
def certs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Certs:
    return trust_test_ca(tmp_path, monkeypatch, ("AWS_CA_BUNDLE",))


@pytest.fixture
def server_for(certs: Certs) -> Iterator[Start]:
    with hostile_servers(_DATA, certs.chain, certs.key) as start:
        yield start


def _stat(url: str, timeout: float = 10) -> tuple[int, str | None]:
    target = plain_target(url)
    assert target is not None
    return HttpSource(target).stat(timeout)


def test_a_head_cut_mid_way_names_the_url(server_for: Start) -> None:
    url = server_for("head-cut").url()
    with pytest.raises(ConnectionError, match=f"HEAD {url}: the connection closed after"):
        _stat(url)


def test_an_answer_that_is_not_http_names_the_url(server_for: Start) -> None:
    url = server_for("garbage").url()
    with pytest.raises(OSError, match=f"HEAD {url}: malformed answer head"):
        _stat(url)


def test_a_head_never_answered_times_out_naming_the_url(server_for: Start) -> None:
    url = server_for("silent").url()
    with pytest.raises(DownloadTimeoutError, match=f"HEAD {url}"):
        _stat(url, timeout=1.0)
