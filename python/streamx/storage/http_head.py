"""One ``HEAD``: an object's size and ``ETag``, on the pooled kept-alive connections.

A source of many files is looked at one ``HEAD`` per file; each on a fresh connection would
cost a TCP (and TLS) handshake per file. Over HTTPS the ``HEAD`` goes on the pool's Rust TLS
sessions (``_core.TlsStream.head``), the ones its footers' and shards' GETs then take, so a
file is stated and read on one session; elsewhere (plain HTTP, ``STREAMX_RUST_TLS=0``, a
host only OpenSSL verifies, a request that cannot be written raw) on a connection from its
host's pool (:mod:`~streamx.storage.http_pool`: the same timeouts and certificate
verification as the GETs). Either goes back once the answer is read, an error status
included (a ``HEAD`` answer has no body to drain); a kept-alive one the server has since
closed is replaced once. Both answers are read by the same code below.
"""

from __future__ import annotations

import http.client
import ssl
import time
from dataclasses import dataclass

from streamx import _core
from streamx.exceptions import HttpResponseError, TlsCertificateError, TruncatedDownloadError
from streamx.storage import accounting, throttle
from streamx.storage.certificate_errors import refused_certificate
from streamx.storage.http_pool import (
    STALE_CONNECTION,
    ConnectionPool,
    OpenSslOnly,
    TlsSession,
    pool_for,
)
from streamx.storage.http_rust import request_head
from streamx.storage.http_target import REDIRECTS, PlainHttp, Redirected, Target

__all__ = ["head_object", "head_size"]


@dataclass(frozen=True)
class _Answer:
    """A ``HEAD``'s status and headers (names lower-cased, repeats joined by ``", "`` as
    ``http.client``'s ``getheader`` joins them)."""

    status: int
    fields: dict[str, str]

    def header(self, name: str) -> str | None:
        return self.fields.get(name.lower())


def head_size(target: Target, timeout: float) -> int:
    """The object's size from a ``HEAD`` (plain HTTP: a GET's body size cannot be checked
    against anything else).

    Raises:
        FileNotFoundError, PermissionError, OSError: As :func:`head_object`.
    """
    return head_object(target, timeout)[0]


def head_object(target: Target, timeout: float) -> tuple[int, str | None]:
    """The object's size and ``ETag`` (``None`` without one) from a ``HEAD``.

    Raises:
        FileNotFoundError: 404, naming the URL and the status.
        PermissionError: 401 or 403, naming the URL and the status.
        HttpResponseError: Another error status (``S3ResponseError`` for S3), with its
            ``Retry-After`` kept for :mod:`~streamx.storage.throttle`.
        Redirected: A plain HTTP server redirected the request.
        TruncatedDownloadError: The answer announced no ``Content-Length``, or not a number.
        TlsCertificateError: The server's certificate failed verification (host and reason).
        TimeoutError: No answer within ``timeout`` seconds.
        OSError: The connection failed, or the answer is not HTTP (naming the URL).
    """
    answer = _head_in_rust(target, timeout) if target.scheme == "https" else None
    if answer is None:
        answer = _head_in_python(target, timeout)
    location = answer.header("Location")
    if answer.status in REDIRECTS and location and isinstance(target, PlainHttp):
        raise Redirected(target.url, answer.status, location)
    if answer.status != 200:
        raise _refusal(target, answer)
    length = answer.header("Content-Length")
    if length is None:
        raise TruncatedDownloadError(f"{target.url}: HEAD announced no Content-Length")
    if not length.strip().isascii() or not length.strip().isdigit():
        raise TruncatedDownloadError(f"{target.url}: HEAD announced Content-Length {length!r}")
    return int(length), answer.header("ETag")


def _head_in_rust(target: Target, timeout: float) -> _Answer | None:
    """The answer read by a pooled Rust TLS session, or None where ``http.client`` must ask
    (no Rust TLS for the host, a request not plain ASCII, an interim ``1xx`` answer)."""
    request = request_head(target, target.head_headers(), method="HEAD")
    pool = pool_for(target.scheme, target.host, target.port)
    if request is None or not pool.rust_tls:
        return None
    deadline = time.monotonic() + timeout
    try:
        session, reused, (outcome, status, fields, reusable) = _ask(pool, target, request, deadline)
    except OpenSslOnly:
        return None  # verified by Python's ssl instead (a self-signed CA as the server's cert)
    except OSError as err:
        named = _naming(err, target.url)
        if named is err:
            raise
        raise named from err
    if reusable and outcome == "complete":
        pool.give_back_tls(session)
    else:
        session.close()
    if outcome == "complete":
        return _Answer(status, _joined(fields)) if status >= 200 else None  # 1xx: http.client
    if reused:
        pool.close_idle()  # kept alive as long, the idle ones may be as dead: retire them
    if outcome == "stale" and time.monotonic() < deadline:
        raise ConnectionResetError(
            f"HEAD {target.url}: the server closed the connection unanswered"
        )
    raise TimeoutError(f"HEAD {target.url}: no answer within {timeout:g}s")


def _ask(
    pool: ConnectionPool, target: Target, request: bytes, deadline: float
) -> tuple[TlsSession, bool, _core._HeadOutcome]:
    """(the session, whether it was idle, its answer); a kept-alive session the server has
    since closed is replaced once."""
    timeout = deadline - time.monotonic()
    session, reused = _take_tls(pool, target, timeout, fresh=False)
    while True:
        accounting.count("HEAD")
        try:
            got = session.stream.head(request, deadline - time.monotonic())
        except BaseException:
            session.close()
            raise
        if got[0] != "stale" or not reused or time.monotonic() >= deadline:
            return session, reused, got
        # The server closed the idle session: not a failure, ask on a new one.
        session.close()
        session, reused = _take_tls(pool, target, deadline - time.monotonic(), fresh=True)


def _take_tls(
    pool: ConnectionPool, target: Target, timeout: float, *, fresh: bool
) -> tuple[TlsSession, bool]:
    """A pooled Rust TLS session; a certificate refusal names the request too."""
    try:
        return pool.take_tls(timeout, fresh=fresh)
    except TlsCertificateError as err:
        raise TlsCertificateError(err.host, f"{err.reason} (HEAD {target.url})") from err


def _naming(err: OSError, url: str) -> OSError:
    """``err`` with the request named, keeping its type (a ``ConnectionError`` for an answer
    cut mid-head, ``OSError`` for one that is not HTTP). One with an errno (a refused
    connection) is left for the caller, which names the URL and keeps the errno."""
    if type(err).__module__ != "builtins" or err.errno is not None or f"HEAD {url}" in str(err):
        return err
    return type(err)(f"HEAD {url}: {err}")


def _joined(fields: list[tuple[str, str]]) -> dict[str, str]:
    joined: dict[str, str] = {}
    for name, value in fields:
        key = name.lower()
        joined[key] = f"{joined[key]}, {value}" if key in joined else value
    return joined


def _head_in_python(target: Target, timeout: float) -> _Answer:
    """The answer read by ``http.client`` on a pooled connection."""
    pool = pool_for(target.scheme, target.host, target.port)
    conn, reused = pool.take(timeout)
    try:
        try:
            response = _head(conn, target)
        except STALE_CONNECTION:
            if not reused:
                raise
            # The server closed the idle connection: not a failure, ask on a new one.
            conn.close()
            conn, reused = pool.take(timeout, fresh=True)
            response = _head(conn, target)
    except ssl.SSLCertVerificationError as err:
        conn.close()
        raise refused_certificate(err, target.host, target.port, f"HEAD {target.url}") from err
    except BaseException as err:
        conn.close()
        if reused and isinstance(err, TimeoutError):
            pool.close_idle()  # kept alive as long, the idle ones may be as dead: retire them
        raise
    if conn.sock is not None:  # http.client drops the socket of an answer that closes
        pool.give_back(conn)
    else:
        conn.close()
    return _Answer(response.status, _joined(response.getheaders()))


def _head(conn: http.client.HTTPConnection, target: Target) -> http.client.HTTPResponse:
    conn.request("HEAD", target.path, headers=target.head_headers())
    response = conn.getresponse()
    response.read()  # nothing: a HEAD answer has no body
    return response


def _refusal(target: Target, answer: _Answer) -> OSError:
    """The error for a ``HEAD`` refused with ``answer``, naming the URL and the status (a
    ``HEAD`` answer carries no body, so no server error code beyond the status)."""
    status = answer.status
    reason = http.client.responses.get(status, "")
    said = f"HEAD {target.url}: HTTP {status} {reason}".rstrip()
    if status == 404:
        return FileNotFoundError(said)
    if status in (401, 403):
        return PermissionError(said)
    found = target.error(status, b"")  # the target's own type: S3ResponseError for S3
    if not isinstance(found, HttpResponseError):
        return found
    message = ""
    region = answer.header("x-amz-bucket-region")
    if region:
        message = f"the bucket is in region {region}; set AWS_DEFAULT_REGION"
    refused = type(found)(target.url, status, found.code or reason, message, method="HEAD")
    throttle.note_retry_after(refused, answer.header("Retry-After"))
    return refused
