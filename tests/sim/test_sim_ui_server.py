"""The simulator UI's server without a browser: only its own page may drive it (Host,
Origin and a JSON content type are checked), and a taken port is said plainly."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pytest

from streamx.sim import ui as sim_ui
from streamx.sim.ui import SimServer


@pytest.fixture
def server() -> Iterator[SimServer]:
    srv = SimServer(0)
    yield srv
    srv.close()


def _post(
    server: SimServer, body: bytes, headers: dict[str, str], path: str = "/api/simulate"
) -> tuple[int, dict[str, object]]:
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest("POST", path, skip_host="Host" in headers)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            conn.putheader(key, value)
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


FORM = json.dumps({"samples": "10k", "nodes": "1", "devices": "1", "batch_size": "8"}).encode()


def test_own_page_posts_are_answered(server: SimServer) -> None:
    host = server.url.split("//")[1].strip("/")
    code, answer = _post(
        server, FORM, {"Content-Type": "application/json", "Origin": f"http://{host}"}
    )
    assert code == 200
    assert answer["runs"]


@pytest.mark.parametrize(
    ("headers", "code", "says"),
    [
        ({"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, "Origin"),
        ({"Content-Type": "application/json", "Origin": "null"}, 403, "Origin"),
        ({"Content-Type": "text/plain"}, 415, "application/json"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"),
        ({}, 415, "application/json"),
        ({"Content-Type": "application/json", "Host": "evil.example:80"}, 403, "Host"),
        ({"Content-Type": "application/json", "Host": "127.0.0.1:1"}, 403, "Host"),
    ],
)
def test_foreign_posts_are_refused(
    server: SimServer, headers: dict[str, str], code: int, says: str
) -> None:
    got, answer = _post(server, FORM, headers)
    assert got == code
    assert says in str(answer["error"])


def test_a_foreign_host_cannot_read_the_page(server: SimServer) -> None:
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/", headers={"Host": f"rebound.example:{port}"})
        assert conn.getresponse().status == 403
    finally:
        conn.close()


def test_a_taken_default_port_falls_back_to_a_free_one(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        monkeypatch.setattr(sim_ui, "DEFAULT_PORT", taken)
        httpd = sim_ui._bind(None)
        try:
            assert httpd.server_address[1] not in (taken, 0)
        finally:
            httpd.server_close()
        with pytest.raises(OSError, match=f"port {taken} on 127.0.0.1 is taken"):
            sim_ui._bind(taken)


def test_simulate_ui_on_a_taken_port_says_so() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "streamx", "simulate", "--ui", "--port", str(taken)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert proc.returncode == 1
    assert f"port {taken} on 127.0.0.1 is taken" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_simulate_ui_on_a_taken_default_port_prints_the_one_it_took() -> None:
    """Through the CLI: the default port (not Streamlit's 8501) held by another program,
    ``simulate --ui`` says so, serves on a free port, and prints the address that answers."""
    assert sim_ui.DEFAULT_PORT != 8501
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            busy.bind(("127.0.0.1", sim_ui.DEFAULT_PORT))
            busy.listen()
        except OSError:
            pass  # another program holds it already: the same case
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamx", "simulate", "--ui"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            taken = proc.stdout.readline()
            serving = proc.stdout.readline()
            assert taken.startswith(f"port {sim_ui.DEFAULT_PORT} is taken; using "), taken
            port = int(taken.rsplit("using ", 1)[1].split()[0])
            assert f"http://127.0.0.1:{port}/" in serving
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:
                assert page.status == 200
        finally:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err
