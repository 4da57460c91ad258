"""GETs exchanged by Rust from request to body, without the GIL.

Over plain HTTP a ranged GET is one ``_core.ranged_get`` call: parsing an answer's head with
``http.client`` cost more CPU than a 2 MiB part's bytes. Over HTTPS a Rust TLS session
(``_core.TlsStream``) exchanges ranged and whole GETs and decrypts the body into the file.
Rust handles only the answer a healthy server gives; any other is declined, and the caller
(:func:`~streamx.storage.http_get.get_into`) asks again through ``http.client``, which reads
it and raises what it means, unless the status alone says all (a throttled or failed request
is never sent twice). Rust reads a declined error's short page (a ``503``'s), over plain
HTTP as over TLS, so that its connection serves on and its ``Retry-After`` is kept; a page
cut short, or stalled for two seconds, comes as the head's fields alone (``Retry-After``
kept), and its connection is closed.
"""

from __future__ import annotations

import logging
import re
import time

from streamx import _core
from streamx.exceptions import RangeIgnoredError, TruncatedDownloadError
from streamx.storage import accounting, cancel, throttle
from streamx.storage.http_pool import ConnectionPool, OpenSslOnly, pool_for
from streamx.storage.http_target import Target
from streamx.storage.object_pin import ObjectPin

__all__ = ["ranged_in_rust", "request_head", "tls_in_rust"]

logger = logging.getLogger(__name__)

# (outcome, bytes moved, the object's size or None, reusable, status), as Rust returns it.
_Got = tuple[str, int, int | None, bool, int]
# A declined answer's page read whole: (header fields, body, reusable).
_Page = tuple[list[tuple[str, str]], bytes, bool]


def ranged_in_rust(
    target: Target,
    extra: dict[str, str],
    fd: int,
    start: int,
    length: int,
    timeout: float,
    deadline: float,
    expected: int | None,
) -> int | None:
    """The object's size (-1 if the server did not say) once Rust has moved the range;
    None when the answer was declined (or the request cannot be written raw), so that the
    caller asks again through ``http.client``."""
    request = request_head(target, target.headers(extra))
    if request is None:
        return None
    pool = pool_for(target.scheme, target.host, target.port)
    conn, reused = pool.take(timeout)
    try:
        while True:
            if conn.sock is None:
                conn.connect()
            deadline += throttle.slot_once_connected()  # the pace's wait is not the request's
            sock = conn.sock
            sock.setblocking(False)  # the Rust side waits with poll, bounded by the deadline
            cancel.attach(sock)
            accounting.count("RANGED_GET")
            try:
                raw, page = _core.ranged_get(
                    sock.fileno(), fd, request, start, length, expected, deadline - time.monotonic()
                )
            finally:
                cancel.detach(sock)
            got = _settled(raw, deadline)
            if got[0] != "stale" or not reused:
                break
            # The server closed the idle connection: not a failed attempt, ask again.
            conn.close()
            conn, reused = pool.take(timeout, fresh=True)
    except BaseException:
        conn.close()
        raise
    if (got[0] == "complete" and got[3]) or (page is not None and page[2]):
        pool.give_back(conn)
    else:
        conn.close()
    return _result(target, pool, got, f"{length} bytes", reused, decline=True, page=page)


def tls_in_rust(
    target: Target,
    extra: dict[str, str],
    fd: int,
    sizes: tuple[int, int | None, int | None, int | None],
    timeout: float,
    deadline: float,
    pin: ObjectPin | None = None,
) -> int | None:
    """An HTTPS GET exchanged by a Rust TLS session (:class:`~streamx.storage.http_pool.
    TlsSession`): the body is decrypted into ``fd`` without the GIL. ``sizes`` is (start,
    length or None for the whole object, expected, most). The object's size (-1 if the
    server did not say) once moved; None when the answer was declined (or the request
    cannot be written raw), so that the caller asks again through ``http.client``, which
    reads and reports it (declines are rare: errors, redirects, checksummed bodies). A
    moved answer's version (``ETag``, ``Last-Modified``) is checked against ``pin`` (the
    first pins it), as ``http.client``'s answers are.

    Raises:
        TlsCertificateError: The server's certificate failed verification.
        ObjectChangedError: The answer is of another version than ``pin`` holds.
    """
    start, length, expected, most = sizes
    request = request_head(target, target.headers(extra))
    if request is None:
        return None
    pool = pool_for(target.scheme, target.host, target.port)
    if not pool.rust_tls:
        return None
    try:
        session, reused = pool.take_tls(timeout)
    except OpenSslOnly:
        return None  # verified by Python's ssl instead (a self-signed CA as the server's cert)
    try:
        deadline += throttle.slot_once_connected()  # the pace's wait is not the request's
        while True:
            cancel.attach(session.sock)
            accounting.count(accounting.kind_of("GET", target.path, extra))
            left = deadline - time.monotonic()
            raw: _Got
            try:
                if length is None:
                    raw = session.stream.whole_get(fd, request, expected, most, left)
                elif pin is not None and not pin.known:
                    raw = _pinning(session.stream, fd, request, sizes, left, pin)
                else:
                    raw = session.stream.ranged_get(fd, request, start, length, expected, left)
            finally:
                cancel.detach(session.sock)
            got = _settled(raw, deadline)
            if got[0] != "stale" or not reused:
                break
            # The server closed the idle connection: not a failed attempt, ask again.
            session.close()
            session, reused = pool.take_tls(timeout, fresh=True)
    except BaseException:
        session.close()
        raise
    version = session.stream.version() if got[0] == "complete" else (None, None)
    page = session.stream.declined_page() if got[0] == "declined" else None
    if (got[0] == "complete" and got[3]) or (page is not None and page[2]):
        pool.give_back_tls(session)
    else:
        session.close()
    if pin is not None and got[0] == "complete":
        pin.check(*version)
    asked = f"{length} bytes" if length is not None else f"{got[2]} bytes"
    # A whole GET declined with a 200 is a body Rust does not take (a checksum to verify).
    decline = length is not None or got[4] != 200
    return _result(target, pool, got, asked, reused, decline=decline, page=page)


def _pinning(
    stream: _core.TlsStream,
    fd: int,
    request: bytes,
    sizes: tuple[int, int | None, int | None, int | None],
    seconds: float,
    pin: ObjectPin,
) -> _Got:
    """A ranged GET whose answer pins ``pin`` once its head is read, before its body: the
    file's other parts wait for the pin (``If-Match``), and so not for this whole body.

    Raises:
        ObjectChangedError: The answer is of another version than ``pin`` holds.
    """
    start, length, expected, _ = sizes
    assert length is not None
    step = stream.ranged_head(request, start, length, expected, seconds)
    if step[0] != "head":
        return step
    pin.check(*stream.version())
    return stream.pending_body(fd)


def _settled(got: _Got, deadline: float) -> _Got:
    """Counts the bytes moved, and reads a connection that ended unanswered past the
    deadline as the timeout it is, not as a stale connection."""
    accounting.add_bytes(got[1])
    if got[0] == "stale" and time.monotonic() >= deadline:
        return ("head-timeout", *got[1:])
    return got


def _result(
    target: Target,
    pool: ConnectionPool,
    got: _Got,
    asked: str,
    reused: bool,
    *,
    decline: bool,
    page: _Page | None = None,
) -> int | None:
    """The object's size (-1 if unsaid) for a moved body; None to ask again; else raises."""
    outcome, moved, total, _, status = got
    if outcome == "complete":
        return -1 if total is None else total
    if outcome == "declined":
        if decline:
            _declined(target, status, page)
        return None
    if outcome == "head-timeout" and reused:
        pool.close_idle()  # kept alive as long, the idle ones may be as dead: retire them
    if outcome == "stale":
        raise ConnectionResetError(f"GET {target.url}: the server closed the connection unanswered")
    if outcome == "closed":
        raise TruncatedDownloadError(f"{target.url}: received {moved} of {asked}")
    raise TimeoutError(f"GET {target.url} ran past its deadline after {moved} of {asked}")


def _declined(target: Target, status: int, page: _Page | None) -> None:
    """Raises the error for an answer Rust declined where its status says all (a throttled
    or failed request must not be sent twice), with its ``Retry-After`` when its ``page``
    (or its head's fields alone) came; returns to ask again through ``http.client``, whose
    answer's body makes the message (403, redirects)."""
    if status == 200:
        raise RangeIgnoredError(f"{target.url}: the server ignores Range requests")
    if status in throttle.THROTTLE_STATUSES and page is None:
        throttle.want_headers(target.host, target.port)  # the next one's headers are read
    if status in (404, 429) or status >= 500:
        error = target.error(status, b"" if page is None else page[1])
        if page is not None:
            throttle.note_retry_after(error, _field(page[0], "retry-after"))
        raise error
    logger.debug("GET %s (a range) answered %d: asking through http.client", target.url, status)


def _field(fields: list[tuple[str, str]], name: str) -> str | None:
    """The first value of the header field ``name`` (any case)."""
    return next((value for key, value in fields if key.lower() == name), None)


# What may go into a raw request unchecked: a percent-encoded path, and header text without
# line breaks. Anything else goes through http.client, which validates it and says why.
_RAW_PATH = re.compile(r"[!-~]+")
_RAW_TEXT = re.compile(r"[ -~]*")


def request_head(target: Target, headers: dict[str, str], method: str = "GET") -> bytes | None:
    """The request head of a GET (or ``method``) as ``http.client`` would send it, or None
    when a part of it is not plain ASCII text."""
    if not _RAW_PATH.fullmatch(target.path):
        return None
    lines = [f"{method} {target.path} HTTP/1.1"]
    names = {name.lower() for name in headers}
    if "host" not in names:
        host = f"[{target.host}]" if ":" in target.host else target.host
        default = 443 if target.scheme == "https" else 80  # http.client names no default port
        lines.append(
            f"Host: {host}" if target.port in (None, default) else f"Host: {host}:{target.port}"
        )
    if "accept-encoding" not in names:
        lines.append("Accept-Encoding: identity")
    for name, value in headers.items():
        if not (_RAW_TEXT.fullmatch(name) and _RAW_TEXT.fullmatch(value)) or ":" in name:
            return None
        lines.append(f"{name}: {value}")
    lines.append("\r\n")
    return "\r\n".join(lines).encode("ascii")
