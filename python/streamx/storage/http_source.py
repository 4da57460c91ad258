"""The direct route's source: one object over HTTP (signed for S3, plain for http(s)://).

Plain HTTP servers are met as ``curl -L`` meets them: redirects (301, 302, 303, 307, 308)
are followed, at most :data:`MAX_REDIRECTS` hops and only to http(s), and the object is
then asked for at its new address; a server that refuses ``HEAD`` (405, 403, 501...) has
its object fetched in one GET, whose announced length is checked instead. Every network
error names the URL, keeping its type (a refused connection stays a
``ConnectionRefusedError``).
"""

from __future__ import annotations

import http.client
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urljoin, urlparse

from streamx.exceptions import HttpResponseError, RangeIgnoredError
from streamx.storage import throttle
from streamx.storage.errors import DownloadTimeoutError, TruncatedDownloadError
from streamx.storage.http_get import (
    PlainHttp,
    Redirected,
    Target,
    get_into,
    head_object,
    head_size,
)
from streamx.storage.object_pin import ObjectPin

__all__ = ["MAX_REDIRECTS", "HttpSource", "plain_target"]

logger = logging.getLogger(__name__)

# Hops one object may take; curl -L allows 50, browsers about 20.
MAX_REDIRECTS = 20

T = TypeVar("T")


def plain_target(url: str) -> PlainHttp | None:
    """The target of a plain http(s) URL, or None when fsspec must serve it (user info, a
    query string)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname or parsed.username:
        return None
    if parsed.query:
        return None
    return PlainHttp(url, parsed.scheme, parsed.hostname, parsed.port, parsed.path or "/")


class HttpSource:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.url = target.url
        self._hops = 0
        self._lock = threading.Lock()

    def fetch_whole(
        self, tmp: str, expected: int | None, timeout: float, most: int | None = None
    ) -> None:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        deadline = time.monotonic() + timeout
        try:
            self._call(
                lambda target: get_into(
                    target,
                    fd,
                    0,
                    None,
                    timeout=timeout,
                    deadline=deadline,
                    expected=expected,
                    most=most,
                ),
                f"download attempt of {self.url} took over {timeout}s",
            )
        finally:
            os.close(fd)

    def size(self, timeout: float) -> int | None:
        """The object's size from a ``HEAD`` (plain HTTP only), a throttled answer waited
        out as :meth:`stat` waits; None where the server refuses ``HEAD`` or announces no
        length, so that one GET checks its own length.

        Raises:
            ThrottledError: The server throttled ``STREAMX_THROTTLE_RETRIES`` tries.
        """
        # S3 checks a whole GET against its stored checksum; plain HTTP has only the size.
        if not isinstance(self.target, PlainHttp):
            return None
        try:
            return throttle.waiting_out(
                lambda: self._call(lambda target: head_size(target, timeout), f"HEAD {self.url}"),
                self.url,
            )
        except (HttpResponseError, PermissionError, TruncatedDownloadError) as err:
            if isinstance(err, throttle.ThrottledError):
                raise  # a GET would be throttled as well: asking for the body would not help
            if isinstance(err, HttpResponseError) and err.status < 400:
                raise  # too many redirects: a GET would follow the same ones
            # HEAD refused, or answered without a length: one GET checks its own length.
            logger.info("HEAD %s failed (%s); fetching it in one GET", self.url, err)
            return None

    def stat(self, timeout: float) -> tuple[int, str | None]:
        """The object's size and ``ETag`` from a ``HEAD``, redirects followed, a throttled
        answer waited out (its ``Retry-After`` obeyed) and asked again.

        Raises:
            FileNotFoundError, PermissionError, OSError: As a GET's; ``TruncatedDownloadError``
                if the answer has no ``Content-Length``.
            ThrottledError: The server throttled ``STREAMX_THROTTLE_RETRIES`` tries.
        """
        return throttle.waiting_out(
            lambda: self._call(lambda target: head_object(target, timeout), f"HEAD {self.url}"),
            self.url,
        )

    def fetch_range(
        self,
        fd: int,
        start: int,
        length: int,
        size: int,
        deadline: float,
        pin: ObjectPin | None = None,
    ) -> None:
        leading = pin is not None and pin.lead()
        if pin is not None and not leading:
            # A part asks for the version the lead's answer pinned, with If-Match: over
            # HTTPS the lead's head pins it (its body still coming), over plain HTTP its
            # answer read by http.client.
            pin.wait(deadline)
            if pin.ranges_ignored:
                raise RangeIgnoredError(f"{self.url}: the server ignores Range requests")
        timeout = max(deadline - time.monotonic(), 0.001)
        try:
            self._call(
                lambda target: get_into(
                    target,
                    fd,
                    start,
                    length,
                    timeout=timeout,
                    deadline=deadline,
                    expected=size,
                    pin=pin,
                ),
                f"GET {self.url} (a range) ran past its timeout",
            )
        except RangeIgnoredError:
            if leading and pin is not None:
                pin.ranges_ignored = True  # the parts waiting for the lead ask nothing
            raise
        finally:
            if leading and pin is not None:
                pin.settle()

    def _call(self, request: Callable[[Target], T], timeout_message: str) -> T:
        """``request`` against the current target, following redirects; errors name the URL."""
        while True:
            target = self.target
            try:
                return request(target)
            except Redirected as err:
                self._redirect(target, err)
            except http.client.IncompleteRead as err:
                raise TruncatedDownloadError(
                    f"{self.url}: connection closed mid-body ({err!r})"
                ) from err
            except TimeoutError as err:
                raise DownloadTimeoutError(timeout_message) from err
            except OSError as err:
                named = _naming(err, target.url)
                if named is None:
                    raise
                raise named from err
            except http.client.HTTPException as err:  # more header fields than it reads, say
                raise OSError(f"{target.url}: malformed answer head: {err}") from err

    def _redirect(self, target: Target, err: Redirected) -> None:
        with self._lock:
            if self.target is not target:
                return  # another part's thread followed it already
            if self._hops >= MAX_REDIRECTS:
                raise HttpResponseError(
                    self.url, err.status, "", f"more than {MAX_REDIRECTS} redirects"
                )
            where = urljoin(target.url, err.location)
            parsed = urlparse(where)
            new = PlainHttp(
                where,
                parsed.scheme,
                parsed.hostname or "",
                parsed.port,
                (parsed.path or "/") + (f"?{parsed.query}" if parsed.query else ""),
            )
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise HttpResponseError(
                    self.url, err.status, "", f"a redirect to {where!r}, which is not http(s)"
                )
            logger.debug("%s redirects (HTTP %d) to %s", target.url, err.status, where)
            self.target, self._hops = new, self._hops + 1


def _naming(err: OSError, url: str) -> OSError | None:
    """The same error naming ``url``, for a bare one from the socket layer (``[Errno
    111] Connection refused``); None when it names it already or is streamx's own."""
    if type(err).__module__ not in ("builtins", "socket") or url in str(err):
        return None
    try:
        if err.errno is not None:
            return type(err)(err.errno, f"{err.strerror} ({url})")
        return type(err)(f"{err} ({url})")
    except TypeError:  # an exception class with another constructor
        return None
