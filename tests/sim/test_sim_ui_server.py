"""The simulator UI's server without a browser: only its own page may drive it (Host,
Origin and a JSON content type are checked), and a taken port is said plainly."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from subprocess import PIPE

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


def _ui_child(
    *args: str, default_port: int = 0, sigint: str = "default_int_handler", stdout: int = PIPE
) -> subprocess.Popen[str]:
    """``streamx simulate --ui`` started as from a terminal, whatever this process inherited.

    A test runner started as a script's background job ignores SIGINT, and its children
    inherit that: Python then raises no KeyboardInterrupt, so a Ctrl-C test would hang.
    ``sigint`` names the child's handler (``SIG_IGN`` shows that case on purpose).
    ``default_port`` replaces 8642, which another checkout's run of this test on the same
    machine may hold, or free between this test's bind and the child's.
    """
    code = (
        "import runpy, signal; from streamx.sim import ui; "
        f"signal.signal(signal.SIGINT, signal.{sigint}); "
        f"ui.DEFAULT_PORT = {default_port or sim_ui.DEFAULT_PORT}; "
        "runpy.run_module('streamx', run_name='__main__', alter_sys=True)"
    )
    command = [sys.executable, "-c", code, "simulate", "--ui", *args]
    return subprocess.Popen(command, stdout=stdout, stderr=PIPE, text=True)


def _interrupt(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C, then what the child wrote to stderr; a child that outlives it is killed."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def test_simulate_ui_on_a_taken_default_port_prints_the_one_it_took() -> None:
    """Through the CLI: the default port (not Streamlit's 8501; here one this test holds)
    taken by another program, ``simulate --ui`` says so, serves on a free port, prints the
    address that answers, and Ctrl-C stops it quietly."""
    assert sim_ui.DEFAULT_PORT != 8501
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        held = busy.getsockname()[1]
        proc = _ui_child(default_port=held)
        try:
            assert proc.stdout is not None
            taken = proc.stdout.readline()
            serving = proc.stdout.readline()
            assert taken.startswith(f"port {held} is taken; using "), taken
            port = int(taken.rsplit("using ", 1)[1].split()[0])
            assert f"http://127.0.0.1:{port}/ (Ctrl-C stops)" in serving
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:
                assert page.status == 200
        finally:
            err = _interrupt(proc)
    assert proc.returncode == 0
    assert "Traceback" not in err


def _full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is full: a write to it blocks until its reader reads."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(write_end, b"-" * 4096)
    os.set_blocking(write_end, True)
    return read_end, write_end


def _wait_writing_to_a_pipe(proc: subprocess.Popen[str]) -> None:
    wchan = Path(f"/proc/{proc.pid}/wchan")
    # Bounded: a kernel that hides wchan (it reads "0") fails here, not at pytest's timeout.
    deadline = time.monotonic() + 60
    while "pipe_write" not in wchan.read_text():
        assert proc.poll() is None, "the UI exited before printing its address"
        assert time.monotonic() < deadline, f"{wchan} never named pipe_write"
        time.sleep(0.02)


def test_ctrl_c_while_the_address_is_printed_stops_the_ui_as_in_its_loop() -> None:
    """A Ctrl-C that lands while the URL line is still being written (its reader is slow:
    the pipe is full) stops the UI as one in the serving loop does: exit 0, no message.
    It used to escape before the loop's handler, and the CLI exited 130."""
    read_end, write_end = _full_pipe()
    proc = _ui_child("--port", "0", stdout=write_end)
    os.close(write_end)
    with open(read_end, "rb") as out:
        try:
            _wait_writing_to_a_pipe(proc)
        finally:
            proc.send_signal(signal.SIGINT)
            out.read()  # drained, so the child's flush at exit goes through
    _, err = proc.communicate(timeout=30)
    # Not asserted: that the line came through. CPython may drop a line whose write a
    # KeyboardInterrupt cut (a plain print in a bare child does so too, 8 times in 40).
    assert proc.returncode == 0, err
    assert err == ""


def test_where_sigint_is_ignored_the_ui_says_what_stops_it() -> None:
    """Started with SIGINT ignored (a script's background job), Ctrl-C cannot stop the UI:
    its address line names the signal that does, and that signal stops it."""
    proc = _ui_child("--port", "0", sigint="SIG_IGN")
    try:
        assert proc.stdout is not None
        serving = proc.stdout.readline()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert f"(SIGINT is ignored here; kill {proc.pid} stops it)" in serving
    assert proc.returncode == -signal.SIGTERM, err
