"""The page of an error answer read through ``http.client``, waited for a short while only.

An error's page (a ``503``'s, a ``404``'s) makes its message. A page that stalls must not
hold its GET until the read timeout: each read of it waits at most ``PAGE_WAIT_S`` (as
Rust's reader of a declined page does), and a page not read then is dropped. The status and
the head's fields (``Retry-After``) are the answer, and the connection, its page unread, is
closed, not reused (:func:`~streamx.storage.http_get.get_into`).
"""

from __future__ import annotations

import contextlib
import http.client
import socket

__all__ = ["MOST_PAGE_BYTES", "PAGE_WAIT_S", "error_page"]

# The most of a page read (as many bytes as Rust reads of a declined answer's page).
MOST_PAGE_BYTES = 64 << 10
# The longest one read of a page waits (Rust's PAGE_WAIT, streamx-core http_range/page.rs).
PAGE_WAIT_S = 2.0


def error_page(response: http.client.HTTPResponse, sock: socket.socket | None) -> bytes:
    """Up to ``MOST_PAGE_BYTES`` of ``response``'s page (``sock``: its connection's socket);
    empty where a read of it waited ``PAGE_WAIT_S`` in vain or the connection ended first."""
    before = None if sock is None else sock.gettimeout()
    if sock is not None:
        sock.settimeout(PAGE_WAIT_S if before is None else min(before, PAGE_WAIT_S))
    try:
        return response.read(MOST_PAGE_BYTES)
    except (OSError, http.client.HTTPException):
        return b""  # left unread: the response is not at its end, so the connection closes
    finally:
        if sock is not None:
            with contextlib.suppress(OSError):  # closed meanwhile (a hedge that won)
                sock.settimeout(before)
