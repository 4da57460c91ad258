"""A paced HTTPS request takes its start slot once its connection is connected and
handshaken (issue 26): the spacing the pace gives is the spacing the store sees, however
late a new connection's set-up is. Before, the slot came first and a slow handshake let the
next request reach the store right behind it, which a store without burst (nginx's
``limit_req``) refuses with a 503 and a whole ``Retry-After``. And the GETs of a host that
throttled lately (read through ``http.client``) reuse their HTTPS connection, the 503's
included."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from delaying_proxy import DelayingProxy
from https_certs import Certs, trust_test_ca
from nginx_server import Nginx, find_nginx

from streamx.storage import download, http_pool, request_pace, throttle
from streamx.storage.download import download_file
from streamx.storage.request_pace import pace_for

pytestmark = [
    pytest.mark.remote,
    pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed"),
]

FILES = 6
SIZE = 100_000  # a second at the store's 100 KB/s: each GET outlasts the pace's interval
PACE = 4.0  # requests/s: 250 ms apart, well apart for the store's 100 ms
# Every other new connection reaches the store this late: a set-up slower than one interval
# of the store's limit, as a loaded machine's TLS handshakes are.
SETUP_DELAY_S = 0.22


@pytest.fixture
def certs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Certs]:
    found = trust_test_ca(tmp_path, monkeypatch)
    monkeypatch.setattr(download, "_LOCAL_SLOTS", {})
    # The pace stays where the test sets it: no raises, no quiet doubling.
    monkeypatch.setattr(request_pace, "FIRST_PACE", PACE)
    monkeypatch.setattr(request_pace, "RAISE_FACTOR", 1.0)
    monkeypatch.setattr(request_pace, "RAISE_STEP", 0.0)
    monkeypatch.setattr(request_pace, "QUIET_S", 1e6)
    http_pool._close_all()
    throttle.forget_hosts()
    yield found
    http_pool._close_all()
    throttle.forget_hosts()


def test_paced_requests_on_new_connections_reach_the_store_a_pace_apart(
    tmp_path: Path, certs: Certs
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for number in range(FILES + 1):
        (root / f"f{number}").write_bytes(bytes([number]) * SIZE)
    with (
        Nginx(root, tls=(certs.chain, certs.key), limit_req="10r/s", limit_rate="100k") as nginx,
        DelayingProxy(nginx.port, SETUP_DELAY_S) as proxy,
    ):
        endpoint = f"https://127.0.0.1:{proxy.port}"
        # One calm request first (a host is paced only once it throttled).
        download_file(f"{endpoint}/f{FILES}", str(tmp_path / "warm"), expected_size=SIZE)
        http_pool._close_all()  # every paced request below opens a new connection
        pace = pace_for(f"127.0.0.1:{proxy.port}")
        pace.throttled(pace.take())  # what a 503 does: the host is paced from here
        assert pace.rate == PACE

        def fetch(number: int) -> None:
            dest = tmp_path / "cache" / f"f{number}"
            download_file(f"{endpoint}/f{number}", str(dest), timeout=30, expected_size=SIZE)

        threads = [threading.Thread(target=fetch, args=(n,)) for n in range(FILES)]
        for thread in threads:
            thread.start()
            time.sleep(0.01)  # each thread's download under way before the next
        for thread in threads:
            thread.join()
        log = nginx.log_when(lambda entries: len(entries) >= FILES + 1)
    for number in range(FILES):
        assert (tmp_path / "cache" / f"f{number}").read_bytes() == bytes([number]) * SIZE
    paced = sorted(log[1:], key=lambda entry: entry.start)
    # No request was refused: each reached the store at least the limit's 100 ms after the
    # one before (nginx logs to the millisecond; the pace's 250 ms less some slack)...
    assert [entry.status for entry in paced] == [200] * FILES
    gaps = [after.start - before.start for before, after in itertools.pairwise(paced)]
    assert min(gaps) >= 1 / PACE - 0.05, gaps
    # ... and each came on a new connection (the one before was still busy).
    assert len({entry.connection for entry in paced}) == FILES


def test_https_answers_through_http_client_leave_their_connection_open(
    tmp_path: Path, certs: Certs
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for number in range(2):
        (root / f"f{number}").write_bytes(bytes([number]) * SIZE)
    with Nginx(root, tls=(certs.chain, certs.key), limit_req="1r/s") as nginx:
        # A host that throttled lately is read through http.client (its Retry-After kept).
        throttle.want_headers("127.0.0.1", nginx.port)
        for number in range(2):  # the second comes within the store's second: refused
            dest = tmp_path / "cache" / f"f{number}"
            download_file(f"{nginx.endpoint}/f{number}", str(dest), expected_size=SIZE)
            assert dest.read_bytes() == bytes([number]) * SIZE
        log = nginx.log_when(lambda entries: len(entries) >= 3)
    assert [entry.status for entry in log][:2] == [200, 503]
    assert log[-1].status == 200
    # One connection carried all three: the first file's (its TLS connection was closed as
    # "unreusable" before: a quiet TLS socket's peek raised), the 503 (read whole; nginx
    # keeps the connection after limit_req's 503) and the refused request asked again.
    assert {entry.connection for entry in log} == {log[0].connection}
