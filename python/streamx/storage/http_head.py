"""One ``HEAD``: an object's size and ``ETag``, on the pooled kept-alive connections.

A source of many files is looked at one ``HEAD`` per file; each on a fresh connection would
cost a TCP (and TLS) handshake per file. The connection comes from its host's pool
(:mod:`~streamx.storage.http_pool`: the same timeouts and certificate verification as the
GETs) and goes back once the answer is read, an error status included (a ``HEAD`` answer
has no body to drain). A kept-alive connection the server has since closed is replaced once.
"""

from __future__ import annotations

import http.client
import ssl

from streamx.exceptions import HttpResponseError, TlsCertificateError, TruncatedDownloadError
from streamx.storage.http_pool import STALE_CONNECTION, pool_for
from streamx.storage.http_target import REDIRECTS, PlainHttp, Redirected, Target

__all__ = ["head_object", "head_size"]


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
        HttpResponseError: Another error status (``S3ResponseError`` for S3).
        Redirected: A plain HTTP server redirected the request.
        TruncatedDownloadError: The answer announced no ``Content-Length``, or not a number.
        TlsCertificateError: The server's certificate failed verification (host and reason).
        OSError: The connection failed.
    """
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
        where = target.host if target.port is None else f"{target.host}:{target.port}"
        reason = err.verify_message or str(err)
        raise TlsCertificateError(where, f"{reason} (HEAD {target.url})") from err
    except BaseException as err:
        conn.close()
        if reused and isinstance(err, TimeoutError):
            pool.close_idle()  # kept alive as long, the idle ones may be as dead: retire them
        raise
    if conn.sock is not None:  # http.client drops the socket of an answer that closes
        pool.give_back(conn)
    else:
        conn.close()
    status = response.status
    location = response.getheader("Location")
    if status in REDIRECTS and location and isinstance(target, PlainHttp):
        raise Redirected(target.url, status, location)
    if status != 200:
        raise _refusal(target, response)
    length = response.getheader("Content-Length")
    if length is None:
        raise TruncatedDownloadError(f"{target.url}: HEAD announced no Content-Length")
    if not length.strip().isascii() or not length.strip().isdigit():
        raise TruncatedDownloadError(f"{target.url}: HEAD announced Content-Length {length!r}")
    return int(length), response.getheader("ETag")


def _head(conn: http.client.HTTPConnection, target: Target) -> http.client.HTTPResponse:
    conn.request("HEAD", target.path, headers=target.head_headers())
    response = conn.getresponse()
    response.read()  # nothing: a HEAD answer has no body
    return response


def _refusal(target: Target, response: http.client.HTTPResponse) -> OSError:
    """The error for a ``HEAD`` refused with ``response``, naming the URL and the status (a
    ``HEAD`` answer carries no body, so no server error code beyond the status)."""
    status = response.status
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
    region = response.getheader("x-amz-bucket-region")
    if region:
        message = f"the bucket is in region {region}; set AWS_DEFAULT_REGION"
    return type(found)(target.url, status, found.code or reason, message, method="HEAD")
