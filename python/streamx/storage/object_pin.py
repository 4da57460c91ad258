"""One remote object's version, pinned across the separate GETs of its parts.

A file fetched as ranged GETs would silently mix two versions if the object were rewritten
between two parts. The first answer's ``ETag`` (or, without one, its ``Last-Modified``)
pins the version: later GETs send it as ``If-Match`` (a strong ETag only: a weak one never
matches), so a changed object answers ``412``, and every answer's own version is compared
with the pin. Either way :class:`~streamx.exceptions.ObjectChangedError` names the object,
and the download starts over with a new pin.

Plain HTTP's ranged exchange in Rust reports no header, so there one part (the *lead*)
learns the version through ``http.client`` while the others wait for it, about one round
trip, and then go through Rust with the condition; a server that ignores ``If-Match`` is
then caught only on the answers read through ``http.client``. Over HTTPS the Rust TLS
session reports each answer's version, so the lead goes there too and every answer is
compared with the pin.

Bytes another request fetched under its own pin (the landed parts of the object's download,
:mod:`~streamx.cache.landed_reads`) join a pin only where their version is the pinned one,
and pin it where none is yet (:meth:`ObjectPin.join`): the next GETs then ask for that
version.
"""

from __future__ import annotations

import threading
import time

from streamx.exceptions import ObjectChangedError

__all__ = ["ObjectChangedError", "ObjectPin", "Version"]

# ("ETag" or "Last-Modified", value): the version an answer said it was of.
Version = tuple[str, str]


class ObjectPin:
    """The version the first answered part of ``url`` had; shared by its parts' threads."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._version: Version | None = None
        self._lock = threading.Lock()
        self._led = False
        self._settled = threading.Event()
        self.ranges_ignored = False  # the lead's range was answered whole: no part asks

    def lead(self) -> bool:
        """True for the first caller only: its request learns the version, and it must
        :meth:`settle` once that request has ended, answered or not."""
        with self._lock:
            led, self._led = self._led, True
        return not led

    def wait(self, deadline: float) -> None:
        """Waits (until ``deadline``, a ``time.monotonic()`` value) for the lead's answer."""
        self._settled.wait(max(deadline - time.monotonic(), 0.0))

    def settle(self) -> None:
        """Lets the waiting parts go, pinned or not (a failed lead, a server without ETag)."""
        self._settled.set()

    @property
    def known(self) -> bool:
        """Whether an answer has pinned a version (its requests can then be conditional)."""
        return self._version is not None

    @property
    def version(self) -> Version | None:
        """The pinned version; None while no answer has pinned one."""
        return self._version

    def accepts(self, version: Version | None) -> bool:
        """Whether bytes fetched under ``version`` (another request's pin; None where it
        pinned nothing) may join this pin's: ``version`` is the pinned one, or none is
        pinned yet."""
        pinned = self._version
        return pinned is None or pinned == version

    def join(self, version: Version | None) -> bool:
        """As :meth:`accepts`, and pins ``version`` where none is pinned yet (this pin's
        next requests then ask for it)."""
        with self._lock:
            if self._version is None and version is not None:
                self._version = version
                self._settled.set()
            return self._version is None or self._version == version

    def headers(self) -> dict[str, str]:
        """The condition a request for another part carries, once a version is pinned."""
        version = self._version
        if version is None:
            return {}
        kind, value = version
        if kind == "ETag":
            return {} if value.startswith("W/") else {"if-match": value}
        return {"if-unmodified-since": value}

    def check(self, etag: str | None, modified: str | None) -> None:
        """Pins the version of the first answer; refuses an answer of another version.

        Raises:
            ObjectChangedError: The answer is of another version than the pinned one.
        """
        seen = ("ETag", etag) if etag else ("Last-Modified", modified) if modified else None
        if seen is None:
            self._settled.set()  # a server that gives no version: nothing to wait for
            return
        with self._lock:
            if self._version is None:
                self._version = seen
                self._settled.set()
                return
            pinned = self._version
        if pinned[0] == seen[0] and pinned[1] != seen[1]:
            raise ObjectChangedError(
                f"{self.url} changed on the server while its parts were downloaded "
                f"({pinned[0]} {pinned[1]}, then {seen[1]})"
            )

    def refused(self) -> ObjectChangedError:
        """The error for a ``412``: the object no longer has the pinned version."""
        kind, value = self._version or ("version", "?")
        return ObjectChangedError(
            f"{self.url} changed on the server while its parts were downloaded (the server "
            f"refused a part of the object with {kind} {value}: HTTP 412)"
        )
