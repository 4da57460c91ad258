"""Requests and bytes, counted by kind: what an object store bills.

Stores bill per request, and the price depends on its kind: S3 charges GETs and HEADs at
one rate, and PUTs, POSTs and LISTs at about twelve times that. Every request that streamx
sends itself (through :mod:`~streamx.storage.http_pool` or Rust's ranged GET) is counted
here, per process, and in the iteration metrics of the current epoch
(:mod:`streamx.runtime.metrics`). Requests made through fsspec (gcsfs, adlfs, s3fs for
listings and profiles) are not seen.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Literal

from streamx.runtime import metrics

__all__ = ["KINDS", "Kind", "add_bytes", "count", "kind_of", "reset", "totals"]

Kind = Literal["GET", "RANGED_GET", "HEAD", "LIST", "PUT"]
KINDS: tuple[Kind, ...] = ("GET", "RANGED_GET", "HEAD", "LIST", "PUT")

_LOCK = threading.Lock()
_REQUESTS: dict[str, int] = dict.fromkeys(KINDS, 0)
_BYTES = {"received": 0, "sent": 0}


def kind_of(method: str, path: str, headers: Mapping[str, object]) -> Kind:
    """The billing kind of a request.

    Examples:
        >>> kind_of("GET", "/bucket?list-type=2&prefix=ds/", {})
        'LIST'
        >>> kind_of("GET", "/bucket/shard.mds", {"Range": "bytes=0-9"})
        'RANGED_GET'
    """
    method = method.upper()
    if method == "HEAD":
        return "HEAD"
    if method == "GET":
        if "list-type=" in path or "prefix=" in path.partition("?")[2]:
            return "LIST"
        if any(name.lower() == "range" for name in headers):
            return "RANGED_GET"
        return "GET"
    return "PUT"  # PUT, POST, COPY: the tier S3 bills PUTs at


def count(kind: Kind, received: int = 0, sent: int = 0) -> None:
    """Counts one request of ``kind`` and the body bytes it received or sent."""
    with _LOCK:
        _REQUESTS[kind] += 1
        _BYTES["received"] += received
        _BYTES["sent"] += sent
    metrics.add_request(kind, received, sent)


def add_bytes(received: int) -> None:
    """Counts body bytes received after their request was counted."""
    if not received:
        return
    with _LOCK:
        _BYTES["received"] += received
    metrics.add_request(None, received, 0)


def totals() -> dict[str, int]:
    """This process's counts so far: one key per kind, ``bytes_received`` and ``bytes_sent``."""
    with _LOCK:
        out = dict(_REQUESTS)
        out["bytes_received"], out["bytes_sent"] = _BYTES["received"], _BYTES["sent"]
    return out


def reset() -> None:
    """Sets this process's counts back to zero (a bench measures one phase at a time)."""
    with _LOCK:
        for kind in KINDS:
            _REQUESTS[kind] = 0
        _BYTES["received"] = _BYTES["sent"] = 0
