"""Kept-alive HTTP/1.1 connections, pooled per host and per process.

A connection is used by one thread at a time: taken from its host's pool, given back once
its answer has been read whole. A process made by fork closes its copies of the parent's
idle connections before its first request, so the two never talk over one socket. TLS
connections trust the system's store plus the PEM bundles named by ``AWS_CA_BUNDLE``,
``SSL_CERT_FILE`` and ``REQUESTS_CA_BUNDLE``. For ``https`` hosts the pool also keeps TLS
sessions run by Rust (:class:`TlsSession`, rustls over a socket Python owns), which move
GET bodies into files without the GIL and carry the host's HEADs, so that a file is stated
and read on one session; a certificate that fails verification raises
:class:`~streamx.exceptions.TlsCertificateError`, never a retry without verification. Every request
sent on a pooled connection is counted by kind (:mod:`~streamx.storage.accounting`).
"""

from __future__ import annotations

import atexit
import http.client
import os
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any

from streamx import _core
from streamx.exceptions import TlsCertificateError
from streamx.storage import accounting

__all__ = [
    "STALE_CONNECTION",
    "ConnectionPool",
    "OpenSslOnly",
    "TlsSession",
    "pool_for",
    "tls_context",
    "trust_key",
]

# What a keep-alive connection the server has since closed raises on its next request.
STALE_CONNECTION = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _body_length(body: Any) -> int:
    if isinstance(body, (bytes, bytearray, memoryview, str)):
        return len(body)
    try:
        return os.fstat(body.fileno()).st_size - int(body.tell())
    except (AttributeError, OSError, ValueError):
        return 0


class _Counted(http.client.HTTPConnection):
    def request(
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: Mapping[str, Any] = {},
        *,
        encode_chunked: bool = False,
    ) -> None:
        kind = accounting.kind_of(method, url, headers)
        accounting.count(kind, sent=_body_length(body) if body is not None else 0)
        super().request(method, url, body, headers, encode_chunked=encode_chunked)


class _CountedTls(_Counted, http.client.HTTPSConnection):
    pass


class TlsSession:
    """A Rust TLS session (``_core.TlsStream``) over a socket this object owns and closes.

    Closing never sends ``close_notify``: a forked child closing its copy leaves the
    parent's session intact."""

    def __init__(self, sock: socket.socket, stream: _core.TlsStream) -> None:
        self.sock, self.stream = sock, stream

    def close(self) -> None:
        self.sock.close()


class OpenSslOnly(Exception):
    """The server's certificate is one rustls refuses by design but OpenSSL verifies: a
    self-signed CA certificate serving as the server's own (``openssl req -x509`` makes
    those). The host is then read through Python's ``ssl``, which verifies it."""


def _open_tls(host: str, port: int | None, timeout: float) -> TlsSession:
    deadline = time.monotonic() + timeout
    sock = socket.create_connection((host, port or 443), timeout=timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)  # the Rust side waits with poll, bounded by the deadline
        stream = _core.TlsStream(_rust_tls_config(), host, sock.fileno())
        failure = stream.handshake(max(0.0, deadline - time.monotonic()))
        if failure is not None and "CaUsedAsEndEntity" in failure:
            raise OpenSslOnly(failure)
        if failure is not None:
            raise TlsCertificateError(host if port is None else f"{host}:{port}", failure)
    except BaseException:
        sock.close()
        raise
    return TlsSession(sock, stream)


class ConnectionPool:
    """Idle keep-alive connections to one host; a connection is used by one thread at a time."""

    def __init__(self, scheme: str, host: str, port: int | None) -> None:
        self._scheme, self._host, self._port = scheme, host, port
        self._idle: list[http.client.HTTPConnection] = []
        self._idle_tls: list[TlsSession] = []
        # False once the host needs OpenSSL (:class:`OpenSslOnly`), or where
        # STREAMX_RUST_TLS=0 asks for Python's ssl throughout (a diagnostic and bench switch).
        self.rust_tls = os.environ.get("STREAMX_RUST_TLS", "1") != "0"
        self._lock = threading.Lock()

    def take_tls(self, timeout: float, fresh: bool = False) -> tuple[TlsSession, bool]:
        """A Rust TLS session (idle if there is one, unless ``fresh``) and whether it was idle.

        Raises:
            TlsCertificateError: The server's certificate failed verification.
            TimeoutError, OSError: Connecting or the handshake failed.
        """
        session = None
        if not fresh:
            with self._lock:
                session = self._idle_tls.pop() if self._idle_tls else None
        if session is not None:
            return session, True
        try:
            return _open_tls(self._host, self._port, timeout), False
        except OpenSslOnly:
            self.rust_tls = False
            raise

    def give_back_tls(self, session: TlsSession) -> None:
        with self._lock:
            self._idle_tls.append(session)

    def take(self, timeout: float, fresh: bool = False) -> tuple[http.client.HTTPConnection, bool]:
        """A connection (idle if there is one, unless ``fresh``) and whether it was idle."""
        conn = None
        if not fresh:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
        reused = conn is not None
        if conn is None:
            if self._scheme == "https":
                conn = _CountedTls(self._host, self._port, timeout=timeout, context=tls_context())
            else:
                conn = _Counted(self._host, self._port, timeout=timeout)
        else:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
        return conn, reused

    def give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append(conn)

    def close_idle(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            idle_tls, self._idle_tls = self._idle_tls, []
        for conn in idle:
            conn.close()
        for session in idle_tls:
            session.close()


_POOLS: dict[tuple[str, str, int | None], ConnectionPool] = {}
_POOLS_LOCK = threading.Lock()
_POOLS_PID = os.getpid()
_TLS: dict[tuple[str | None, ...], ssl.SSLContext] = {}
_RUST_TLS: dict[tuple[str | None, ...], _core.TlsClientConfig] = {}
# Where a CA bundle may be named, as the AWS SDKs, OpenSSL and requests read them.
_BUNDLE_VARIABLES = ("AWS_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")


def pool_for(scheme: str, host: str, port: int | None) -> ConnectionPool:
    global _POOLS_PID
    with _POOLS_LOCK:
        if os.getpid() != _POOLS_PID:
            # Sockets inherited through fork belong to the parent's conversations; closing
            # this process's copies leaves the parent's connections open.
            _close_all()
            _POOLS_PID = os.getpid()
        pool = _POOLS.get((scheme, host, port))
        if pool is None:
            pool = _POOLS[(scheme, host, port)] = ConnectionPool(scheme, host, port)
        return pool


@atexit.register
def _close_all() -> None:
    for pool in _POOLS.values():
        pool.close_idle()
    _POOLS.clear()


def _bundles() -> list[tuple[str, str]]:
    """(variable, path) of each CA bundle the environment names, each path once."""
    found: list[tuple[str, str]] = []
    for name in _BUNDLE_VARIABLES:
        path = os.environ.get(name)
        if path and all(path != seen for _, seen in found):
            found.append((name, path))
    return found


def trust_key() -> tuple[str | None, ...]:
    """The environment variables that choose the trusted CAs: a cached TLS setting built
    under other values is not reused."""
    return (*(os.environ.get(name) for name in _BUNDLE_VARIABLES), os.environ.get("SSL_CERT_DIR"))


def tls_context() -> ssl.SSLContext:
    """Python's TLS context for the CAs the environment trusts (system roots plus
    ``AWS_CA_BUNDLE``, ``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE``), one per set of values."""
    key = trust_key()
    context = _TLS.get(key)
    if context is None:
        context = ssl.create_default_context()
        for _, path in _bundles():
            context.load_verify_locations(cafile=path)
        _TLS[key] = context
    return context


def _rust_tls_config() -> _core.TlsClientConfig:
    """The roots Rust TLS sessions trust, built once per set of variables (reading the
    system's store takes milliseconds)."""
    key = trust_key()
    with _POOLS_LOCK:
        config = _RUST_TLS.get(key)
        if config is None:
            config = _RUST_TLS[key] = _core.TlsClientConfig(_bundles())
    return config
