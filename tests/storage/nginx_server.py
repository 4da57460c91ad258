"""nginx from the distribution, started on a free loopback port serving one directory.

Used by the storage tests and by ``benches/bench_objstore.py``. Path-style S3 GETs, HEADs
and ranged GETs of ``/<bucket>/<key>`` map to files under the served directory, so nginx
serves a bucket directory the way S3 answers reads (signatures are ignored). ``limit_rate``
caps each connection's rate, as S3 caps each GET. The access log records, per request, the
connection number, the Range asked for, the status, the body bytes sent and the start and
end times, so tests can count ranged requests that overlapped. ``delay_ms`` holds every
request that long before it is answered (Debian's echo module), the round trip that a GET
costs on a link with that latency; this VM's kernel has no netem to shape a link itself.
``limit_req`` (e.g. ``"20r/s"``) answers requests past that rate with ``503`` and
``Retry-After: 1``, as S3 throttles a hot prefix with ``503 SlowDown``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ECHO_MODULE", "LogEntry", "Nginx", "TlsEntry", "find_nginx", "max_overlap"]

ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"

_CONFIG = """
{modules}
daemon off;
master_process on;
{user}
worker_processes {workers};
pid {state}/nginx.pid;
error_log {state}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    keepalive_timeout 60s;
    client_body_temp_path {state}/body;
    proxy_temp_path {state}/proxy;
    fastcgi_temp_path {state}/fastcgi;
    uwsgi_temp_path {state}/uwsgi;
    scgi_temp_path {state}/scgi;
    log_format timed '$connection "$http_range" $status $body_bytes_sent '
                     '$msec $request_time $request_method $uri';
    access_log {state}/access.log timed;
    {tls_log}
    {zones}
    server {{
        listen 127.0.0.1:{port}{ssl};
        root {root};
        {limit}
        {delay}
        {locations}
    }}
}}
"""


def find_nginx() -> str | None:
    """The nginx binary, or None when it is not installed."""
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(p)), None
    )


@dataclass(frozen=True)
class LogEntry:
    """One request of the access log."""

    connection: int
    range: str
    status: int
    sent: int
    start: float
    end: float
    method: str
    uri: str


@dataclass(frozen=True)
class TlsEntry:
    """One request's TLS connection: its number, the requests it had carried (this one
    included), whether its handshake resumed a session, and what it negotiated."""

    connection: int
    requests: int
    resumed: bool
    protocol: str
    cipher: str


# Over TLS a second log says, per request, how its connection's handshake went.
_TLS_LOG = (
    "log_format tls '$connection $connection_requests $ssl_session_reused $ssl_protocol "
    "$ssl_cipher'; access_log {state}/tls.log tls;"
)


class Nginx:
    """A running nginx serving ``root``; ``limit_rate`` like ``"40m"`` caps each connection.

    Use as a context manager; the process is stopped on exit.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        limit_rate: str | None = None,
        delay_ms: int | None = None,
        limit_req: str | None = None,
        workers: int = 2,
        tls: tuple[str | Path, str | Path] | None = None,
        locations: str = "",
    ):
        binary = find_nginx()
        if binary is None:
            raise FileNotFoundError("nginx is not installed (apt-get install -y nginx)")
        modules, delay = _delaying(delay_ms) if delay_ms else ("", "")
        self.root = str(root)
        self.state = tempfile.mkdtemp(prefix="streamx-nginx-")
        self.port = _free_port()
        limit = _pacing(limit_rate) if limit_rate else ""
        zones, throttling = _throttling(limit_req) if limit_req else ("", "")
        # tls: (certificate chain, key) in PEM; the server then speaks HTTPS only.
        self.scheme = "https" if tls else "http"
        if tls:
            throttling += f" ssl_certificate {tls[0]}; ssl_certificate_key {tls[1]};"
        config = os.path.join(self.state, "nginx.conf")
        with open(config, "w") as out:
            out.write(
                _CONFIG.format(
                    # As root, workers would drop to "nobody", who cannot read tmp dirs.
                    user="user root;" if os.geteuid() == 0 else "",
                    workers=workers,
                    state=self.state,
                    port=self.port,
                    ssl=" ssl" if tls else "",
                    root=self.root,
                    limit=f"{limit} {throttling}",
                    zones=zones,
                    modules=modules,
                    delay=delay,
                    tls_log=_TLS_LOG.format(state=self.state) if tls else "",
                    # nginx directives for the server block (a front's proxied locations).
                    locations=locations,
                )
            )
        self._process = subprocess.Popen(
            [binary, "-c", config, "-p", self.state, "-e", os.path.join(self.state, "error.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._wait_ready()

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The master process (its workers are its children): for a bench's CPU accounting."""
        return self._process.pid

    def _wait_ready(self) -> None:
        for _ in range(500):
            if self._process.poll() is not None:
                err = self._process.stderr.read().decode() if self._process.stderr else ""
                raise RuntimeError(f"nginx exited at start: {err}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.01)
        self.stop()
        raise RuntimeError("nginx did not start listening within 5 s")

    def log(self) -> list[LogEntry]:
        """The access log so far (nginx writes each line when its request ends)."""
        path = os.path.join(self.state, "access.log")
        if not os.path.exists(path):
            return []
        entries = []
        for line in Path(path).read_text().splitlines():
            conn, rest = line.split(" ", 1)
            rng, rest = rest[1:].split('" ', 1)
            status, sent, msec, took, method, uri = rest.split(" ")
            end = float(msec)
            entries.append(
                LogEntry(
                    int(conn), rng, int(status), int(sent), end - float(took), end, method, uri
                )
            )
        return entries

    def tls_log(self) -> list[TlsEntry]:
        """The TLS log so far, one entry per request (empty over plain HTTP)."""
        path = os.path.join(self.state, "tls.log")
        if not os.path.exists(path):
            return []
        entries = []
        for line in Path(path).read_text().splitlines():
            conn, requests, reused, protocol, cipher = line.split(" ")
            entries.append(TlsEntry(int(conn), int(requests), reused == "r", protocol, cipher))
        return entries

    def log_when(
        self, complete: Callable[[list[LogEntry]], bool], timeout: float = 10.0
    ) -> list[LogEntry]:
        """The access log once ``complete`` holds for it, or as it is after ``timeout``
        seconds: nginx writes a request's line after the answer is sent, so the client can
        have read the answer before the line is there."""
        deadline = time.monotonic() + timeout
        entries = self.log()
        while not complete(entries) and time.monotonic() < deadline:
            time.sleep(0.01)
            entries = self.log()
        return entries

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stderr is not None:
            self._process.stderr.close()
        shutil.rmtree(self.state, ignore_errors=True)

    def __enter__(self) -> Nginx:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _pacing(limit_rate: str) -> str:
    """``limit_rate`` with sendfile chunks of 5 ms of traffic. nginx sends a response's
    first chunk (2 MiB by default) at full speed and then waits ``chunk / rate`` in whole
    milliseconds, rounded down: small chunks keep a short ranged GET from getting most of
    its bytes unpaced (S3 does not do that), and a whole number of milliseconds keeps the
    rate what it says."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    rate = int(limit_rate[:-1]) * units[limit_rate[-1].lower()]
    chunk = -(-rate * 5 // 1000)
    # Over TLS nothing is sent by sendfile: a write is one output buffer (64 KiB by
    # default, 1.6 ms at 40 MiB/s, rounded down to 1 ms: 1.5x the rate), so the buffer is
    # 5 ms of traffic too.
    return f"limit_rate {limit_rate}; sendfile_max_chunk {chunk}; output_buffers 1 {chunk};"


def _throttling(rate: str) -> tuple[str, str]:
    """The zone and server lines that answer requests past ``rate`` (e.g. ``"20r/s"``) with
    ``503`` and ``Retry-After: 1``, as S3's ``SlowDown`` (``limit_req`` without ``burst``
    refuses at once what comes too early)."""
    zone = f"limit_req_zone $binary_remote_addr zone=throttle:1m rate={rate};"
    server = "limit_req zone=throttle; limit_req_status 503; add_header Retry-After 1 always;"
    return zone, server


def _delaying(delay_ms: int) -> tuple[str, str]:
    """The module line and locations that answer each request ``delay_ms`` late: the echo
    module's timer (it does not block the worker) and then an internal jump to the files,
    so GETs, HEADs, ranges and 404s are answered as without it."""
    if not os.path.exists(ECHO_MODULE):
        raise FileNotFoundError(
            f"{ECHO_MODULE} is missing (apt-get install -y libnginx-mod-http-echo)"
        )
    locations = (
        f"location / {{ echo_sleep {delay_ms / 1000:.3f}; echo_exec @files; }}\n"
        "        location @files { }"
    )
    return f"load_module {ECHO_MODULE};", locations


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def max_overlap(entries: list[LogEntry], slack: float = 0.003) -> int:
    """The most requests that were being served at the same moment.

    nginx logs times to the millisecond, and a start is derived from the end and the request
    time, so each interval is shrunk by ``slack`` at both ends: a GET that starts in the
    millisecond the previous one ended is not counted as overlapping it.
    """
    spans = [(e.start + slack, e.end - slack) for e in entries]
    events = sorted([(s, 1) for s, e in spans if s < e] + [(e, -1) for s, e in spans if s < e])
    best = now = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best
