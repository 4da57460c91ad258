"""Kept-alive HTTP/1.1 connections, pooled per host and per process.

A connection is used by one thread at a time: taken from its host's pool, given back once
its answer has been read whole. A process made by fork closes its copies of the parent's
idle connections before its first request, so the two never talk over one socket. TLS
connections trust ``AWS_CA_BUNDLE`` when it is set, else the system's store. Every request
sent on a pooled connection is counted by kind (:mod:`~streamx.storage.accounting`).
"""

from __future__ import annotations

import atexit
import http.client
import os
import ssl
import threading
from collections.abc import Mapping
from typing import Any

from streamx.storage import accounting

__all__ = ["STALE_CONNECTION", "ConnectionPool", "pool_for"]

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


class ConnectionPool:
    """Idle keep-alive connections to one host; a connection is used by one thread at a time."""

    def __init__(self, scheme: str, host: str, port: int | None) -> None:
        self._scheme, self._host, self._port = scheme, host, port
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def take(self, timeout: float, fresh: bool = False) -> tuple[http.client.HTTPConnection, bool]:
        """A connection (idle if there is one, unless ``fresh``) and whether it was idle."""
        conn = None
        if not fresh:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
        reused = conn is not None
        if conn is None:
            if self._scheme == "https":
                conn = _CountedTls(self._host, self._port, timeout=timeout, context=_tls_context())
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
        for conn in idle:
            conn.close()


_POOLS: dict[tuple[str, str, int | None], ConnectionPool] = {}
_POOLS_LOCK = threading.Lock()
_POOLS_PID = os.getpid()
_TLS: list[ssl.SSLContext] = []


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


def _tls_context() -> ssl.SSLContext:
    if not _TLS:
        bundle = os.environ.get("AWS_CA_BUNDLE") or None
        _TLS.append(ssl.create_default_context(cafile=bundle))
    return _TLS[0]
