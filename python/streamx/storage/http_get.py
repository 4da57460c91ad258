"""One HTTP/1.1 GET (whole or ranged) written straight into an open file.

Connections are kept alive and pooled per host (:mod:`~streamx.storage.http_pool`). A ranged
GET over plain HTTP, and any GET over HTTPS, is first offered to Rust
(:mod:`~streamx.storage.http_rust`), which exchanges it from request to body without the
GIL; an answer Rust declines is asked again here, through ``http.client``, which reads it and
raises what it means. On a plain connection, a body with a fixed length and no checksum to
verify is moved by Rust without the GIL (``_core.socket_to_file``: socket to pipe to file
with ``splice``, so its bytes never enter user space), after the few bytes ``http.client``
buffered with the headers (:mod:`~streamx.storage.http_body`). Any other body goes from
the socket into a reused per-thread buffer (``readinto1``) and from there into the file with
``os.pwrite`` at its offset. Either way parts of one file land in place from several
threads, and every wait is bounded by what is left of the attempt's deadline, so a body that
stalls mid-way fails in time. Exactly the bytes asked for are read: a server announcing
another length is refused before its body is read, and one sending on past it is never read
further.
"""

from __future__ import annotations

import http.client
import logging
import re
import ssl
from typing import Any

from streamx.exceptions import (
    ChecksumMismatchError,
    HttpResponseError,
    RangeIgnoredError,
    RemoteTooLargeError,
    SizeMismatchError,
    TruncatedDownloadError,
)
from streamx.storage import accounting, cancel, throttle
from streamx.storage.certificate_errors import refused_certificate
from streamx.storage.http_body import Unreusable, read_body, read_unsized, read_whole
from streamx.storage.http_checksums import checksum_of
from streamx.storage.http_head import head_object, head_size
from streamx.storage.http_page import error_page
from streamx.storage.http_pool import STALE_CONNECTION, pool_for
from streamx.storage.http_rust import ranged_in_rust, tls_in_rust
from streamx.storage.http_target import REDIRECTS, PlainHttp, Redirected, Target
from streamx.storage.object_pin import ObjectPin

__all__ = [
    "ChecksumMismatchError",
    "HttpResponseError",
    "PlainHttp",
    "Redirected",
    "Target",
    "get_into",
    "head_object",
    "head_size",
]

logger = logging.getLogger(__name__)

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def get_into(
    target: Target,
    fd: int,
    start: int,
    length: int | None,
    *,
    timeout: float,
    deadline: float,
    expected: int | None = None,
    pin: ObjectPin | None = None,
    most: int | None = None,
) -> int:
    """GETs ``length`` bytes from offset ``start`` (the whole object when ``length`` is
    None) and writes them at the same offset of ``fd``. Returns the object's total size
    (-1 when the server did not say). An object whose size (announced, or in a range's
    ``Content-Range``) is not ``expected``, or is over ``most``, is refused unread. A whole
    object of unannounced length (chunked, or ended by closing) is read up to ``expected``
    (else ``most``) bytes, and no further. Every answer's version is checked against
    ``pin``, and requests carry its condition.

    Raises:
        FileNotFoundError: The object does not exist.
        PermissionError: Access was refused.
        RangeIgnoredError: A ranged GET was answered with the whole object.
        SizeMismatchError: The object's size is not ``expected``.
        TruncatedDownloadError: The body is shorter or longer than announced or asked for.
        RemoteTooLargeError: The object is larger than ``most``.
        ObjectChangedError: The object's version is not the one ``pin`` holds.
        Redirected: A plain HTTP server redirected the request.
        TlsCertificateError: The server's certificate failed verification (naming the
            host, whichever TLS stack verified it).
        TimeoutError: The deadline passed (a stalled body included).
        OSError: Other error statuses and network failures.
    """
    extra = {} if length is None else {"range": f"bytes={start}-{start + length - 1}"}
    if pin is not None:
        extra.update(pin.headers())
    # Plain HTTP's exchange in Rust reports no version: a part goes there only once it is
    # pinned (a changed object then answers 412, which Rust declines and the path below
    # reports). A Rust TLS session reports it, so every HTTPS part goes there, the lead
    # included (no second TLS stack, handshake and context for one part per file).
    # A host that throttles lately is read through http.client, which keeps Retry-After.
    fast = not throttle.headers_wanted(target.host, target.port)
    if length is not None and target.scheme == "http" and (pin is None or pin.known) and fast:
        moved = ranged_in_rust(target, extra, fd, start, length, timeout, deadline, expected)
        if moved is not None:
            return moved
    if target.scheme == "https" and fast:
        sizes = (start, length, expected, most)
        moved = tls_in_rust(target, extra, fd, sizes, timeout, deadline, pin)
        if moved is not None:
            return moved
    pool = pool_for(target.scheme, target.host, target.port)
    conn, reused = pool.take(timeout)
    kept = False
    try:
        if conn.sock is None:
            conn.connect()  # and the TLS handshake: the pace's slot is taken once it is ready
        deadline += throttle.slot_once_connected()  # the pace's wait is not the request's
        try:
            response, sock = _send(conn, target.path, target.headers(extra))
        except STALE_CONNECTION:
            if not reused:
                raise
            # The server closed the idle connection: not a failed attempt, ask again.
            conn.close()
            conn, _ = pool.take(timeout, fresh=True)
            response, sock = _send(conn, target.path, target.headers(extra))
        try:
            body_length, total = _check_status(target, response, sock, (start, length), pin)
        except BaseException:
            # A throttled answer's short page, read whole: the connection serves on (a new
            # one's set-up would cost the next request's time, and with it the pace's spacing).
            kept = response.status in throttle.THROTTLE_STATUSES and read_whole(response)
            raise
        if expected is not None and total not in (-1, expected):
            raise SizeMismatchError(
                f"{target.url} is {total} bytes, {expected} expected "
                f"(the length announced; the body was left unread)",
                total,
            )
        if most is not None and total > most:
            raise RemoteTooLargeError(
                f"{target.url} is {total} bytes, over the bound of {most} bytes for a file "
                "whose size no index gives (STREAMX_MAX_INDEX_BYTES); the body was left unread"
            )
        checksum = checksum_of(response) if length is None else None
        if body_length < 0:
            read_unsized(response, sock, fd, (expected, most), deadline, target.url, checksum)
        else:
            read_body(response, sock, fd, start, body_length, deadline, target.url, checksum)
            accounting.add_bytes(body_length)
    except Unreusable:
        conn.close()  # the body was complete; what the server sent after it is not read
        return total
    except ssl.SSLCertVerificationError as err:
        conn.close()  # never asked again unverified, nor retried (a permanent failure)
        raise refused_certificate(err, target.host, target.port, f"GET {target.url}") from err
    except BaseException as err:
        if kept:
            cancel.detach(sock)
            pool.give_back(conn)
            raise
        conn.close()
        if reused and isinstance(err, TimeoutError):
            pool.close_idle()  # kept alive as long, the idle ones may be as dead: retire them
        raise
    cancel.detach(sock)
    pool.give_back(conn)
    return total


def _send(
    conn: http.client.HTTPConnection, path: str, headers: dict[str, str]
) -> tuple[http.client.HTTPResponse, Any]:
    conn.request("GET", path, headers=headers)
    sock = conn.sock  # kept: the connection drops it when the response says it will close
    cancel.attach(sock)  # a hedge that wins shuts it down
    return conn.getresponse(), sock


def _clipped_at_the_end(found: re.Match[str], start: int, length: int) -> bool:
    """Whether a ``Content-Range`` answer stops at the object's last byte, short of the
    range asked for (RFC 9110: a range past the end is answered up to the end)."""
    if found[3] == "*" or int(found[1]) != start:
        return False
    end, total = int(found[2]), int(found[3])
    return end == total - 1 and end < start + length - 1


def _check_status(
    target: Target,
    response: http.client.HTTPResponse,
    sock: Any,
    asked: tuple[int, int | None],
    pin: ObjectPin | None,
) -> tuple[int, int]:
    """(bytes the body must have, the object's size); -1 for either when not announced.
    ``asked``: the range's start and length (None: the whole object)."""
    start, length = asked
    status = response.status
    location = response.getheader("Location")
    if status in REDIRECTS and location and isinstance(target, PlainHttp):
        raise Redirected(target.url, status, location)
    if status == 412 and pin is not None:
        raise pin.refused()
    if status not in (200, 206):
        error = target.error(status, error_page(response, sock))
        throttle.note_retry_after(error, response.getheader("Retry-After"))
        raise error
    if pin is not None and not (status == 200 and length is not None):  # not a range ignored
        pin.check(response.getheader("ETag"), response.getheader("Last-Modified"))
    announced = response.getheader("Content-Length")
    if length is None:
        if status != 200:
            raise HttpResponseError(target.url, status, "", "a partial answer to a plain GET")
        if announced is None:
            return -1, -1  # chunked, or ended by the server closing the connection
        return int(announced), int(announced)
    if status == 200:
        raise RangeIgnoredError(f"{target.url}: the server ignores Range requests")
    found = _CONTENT_RANGE.fullmatch(response.getheader("Content-Range", ""))
    if found is not None and _clipped_at_the_end(found, start, length):
        # The object ends before the range asked for: it is shorter than its index says (a
        # size error, as a first part would have found from the total), not a cut body.
        raise SizeMismatchError(
            f"{target.url} is {found[3]} bytes: the server sent Content-Range "
            f"{response.getheader('Content-Range')!r} for bytes {start}-{start + length - 1}",
            int(found[3]),
        )
    if found is None or int(found[1]) != start or int(found[2]) != start + length - 1:
        raise TruncatedDownloadError(
            f"{target.url}: asked for bytes {start}-{start + length - 1}, the server sent "
            f"Content-Range {response.getheader('Content-Range')!r}"
        )
    if announced is not None and int(announced) != length:
        raise TruncatedDownloadError(
            f"{target.url}: asked for {length} bytes, the server announced {announced}"
        )
    return length, -1 if found[3] == "*" else int(found[3])
