"""An HTTP response's body into a file at its offset: through Rust without the GIL on a plain
socket (``splice``), else through a reused per-thread buffer and ``os.pwrite``; exactly the
bytes announced, within the attempt's deadline, its checksum verified when it has one.
Whether the connection can serve another request is told by :class:`Unreusable`."""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

from streamx import _core
from streamx.exceptions import (
    ChecksumMismatchError,
    TruncatedDownloadError,
)
from streamx.storage import accounting

__all__ = ["Unreusable", "read_body", "read_unsized", "read_whole"]

_BUFFER = 1 << 20

_LOCAL = threading.local()


def _buffer() -> memoryview:
    view: memoryview | None = getattr(_LOCAL, "view", None)
    if view is None:
        view = _LOCAL.view = memoryview(bytearray(_BUFFER))
    return view


def read_body(
    response: http.client.HTTPResponse,
    sock: Any,
    fd: int,
    offset: int,
    length: int,
    deadline: float,
    url: str,
    checksum: tuple[str, Any, bytes] | None,
) -> None:
    if checksum is None and not response.chunked and _plain_socket(sock):
        _move_body(response, sock, fd, offset, length, deadline, url)
    else:
        _copy_body(response, sock, fd, offset, length, deadline, url, checksum)
    if response.chunked and response.read(1):
        raise TruncatedDownloadError(f"{url}: the server sent more than {length} bytes")
    if checksum is not None and checksum[1].digest() != checksum[2]:
        raise ChecksumMismatchError(f"GET {url}: the body does not match its {checksum[0]}")
    clean = _nothing_pending(response, sock)
    response.close()
    if not clean:
        raise Unreusable


def _plain_socket(sock: Any) -> bool:
    return type(sock) is socket.socket


def _move_body(
    response: http.client.HTTPResponse,
    sock: socket.socket,
    fd: int,
    offset: int,
    length: int,
    deadline: float,
    url: str,
) -> None:
    """The body through Rust, after what ``http.client`` already buffered."""
    assert response.fp is not None
    sock.setblocking(False)  # the Rust side waits with poll, bounded by the deadline
    buffered = response.fp.peek(1)[:length]  # read along with the headers; never waits
    if buffered:
        _pwrite_all(fd, memoryview(response.fp.read(len(buffered))), offset)
    done = len(buffered)
    moved, end = _core.socket_to_file(
        sock.fileno(), fd, offset + done, length - done, deadline - time.monotonic()
    )
    done += moved
    if end == "timeout":
        raise TimeoutError(f"GET {url} ran past its deadline after {done} of {length} bytes")
    if end == "closed":
        raise TruncatedDownloadError(f"{url}: received {done} of {length} bytes")


def _copy_body(
    response: http.client.HTTPResponse,
    sock: Any,
    fd: int,
    offset: int,
    length: int,
    deadline: float,
    url: str,
    checksum: tuple[str, Any, bytes] | None,
) -> None:
    """The body through a reused buffer, in Python (TLS, chunked, or a checksum to keep)."""
    view = _buffer()
    if response.chunked:
        # Chunk framing is between us and the bytes: let http.client strip it.
        read: Callable[[memoryview], int] = response.readinto
    else:
        assert response.fp is not None
        read = response.fp.readinto1
    done = 0
    while done < length:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"GET {url} ran past its deadline after {done} of {length} bytes")
        if sock is not None:
            sock.settimeout(left)
        n = read(view[: min(len(view), length - done)])
        if not n:
            raise TruncatedDownloadError(f"{url}: received {done} of {length} bytes")
        _pwrite_all(fd, view[:n], offset + done)
        if checksum is not None:
            checksum[1].update(view[:n])
        done += n


def read_unsized(
    response: http.client.HTTPResponse,
    sock: Any,
    fd: int,
    sizes: tuple[int | None, int | None],
    deadline: float,
    url: str,
    checksum: tuple[str, Any, bytes] | None,
) -> None:
    """A body of unannounced length, to its end. ``sizes`` is (the size it must have, the
    most it may have): a longer body fails before a byte past the bound is written."""
    expected, most = sizes
    bound = expected if expected is not None else most
    if bound is None:
        raise TruncatedDownloadError(f"{url}: the server sent no Content-Length")
    view = _buffer()
    done = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"GET {url} ran past its deadline after {done} bytes")
        if sock is not None:
            sock.settimeout(left)
        n = response.readinto(view[: min(len(view), bound + 1 - done)])
        if not n:
            break
        if done + n > bound:
            raise TruncatedDownloadError(f"{url}: the server sent more than {bound} bytes")
        _pwrite_all(fd, view[:n], done)
        if checksum is not None:
            checksum[1].update(view[:n])
        done += n
    if expected is not None and done != expected:
        raise TruncatedDownloadError(f"{url}: received {done} of {expected} bytes")
    if checksum is not None and checksum[1].digest() != checksum[2]:
        raise ChecksumMismatchError(f"GET {url}: the body does not match its {checksum[0]}")
    accounting.add_bytes(done)
    response.close()
    raise Unreusable  # its end was the server closing, or a framing not worth trusting again


def read_whole(response: http.client.HTTPResponse) -> bool:
    """Whether the answer was read to its end and the server keeps the connection open."""
    return response.isclosed() and not response.will_close


class Unreusable(Exception):
    """The server sent past the body: the connection cannot carry another request."""


def _nothing_pending(response: http.client.HTTPResponse, sock: Any) -> bool:
    """Whether nothing follows the body (a keep-alive connection may only be reused then)."""
    if sock is None or response.fp is None:
        return False
    sock.setblocking(False)
    try:
        return not response.fp.peek(1)
    except ssl.SSLWantReadError:
        return True  # no TLS record waits: what a quiet TLS connection says (not EAGAIN)
    except OSError:
        return False


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data:
        written = os.pwrite(fd, data, offset)
        data, offset = data[written:], offset + written
