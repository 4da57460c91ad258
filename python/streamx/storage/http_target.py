"""Where one object lives and how to ask for it: the request target the GET paths share."""

from __future__ import annotations

import http.client
from dataclasses import dataclass
from typing import Protocol

from streamx.exceptions import HttpResponseError

__all__ = ["REDIRECTS", "PlainHttp", "Redirected", "Target"]

# The statuses that send a plain HTTP client elsewhere (``Location``).
REDIRECTS = (301, 302, 303, 307, 308)


class Redirected(Exception):
    """A plain HTTP server sent the object elsewhere (``Location``); the caller follows."""

    def __init__(self, url: str, status: int, location: str) -> None:
        super().__init__(f"{url}: HTTP {status} to {location}")
        self.status, self.location = status, location


class Target(Protocol):
    """Where one object lives and how to ask for it."""

    @property
    def url(self) -> str: ...  # for messages
    @property
    def scheme(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int | None: ...
    @property
    def path(self) -> str: ...  # the request path, already percent-encoded

    def headers(self, extra: dict[str, str]) -> dict[str, str]:
        """The request's headers, ``extra`` (e.g. ``range``) included."""
        ...

    def head_headers(self) -> dict[str, str]:
        """The headers of a ``HEAD`` for the object (signed as a ``HEAD`` where signed)."""
        ...

    def error(self, status: int, body: bytes) -> OSError:
        """The exception for an error status."""
        ...


@dataclass(frozen=True)
class PlainHttp:
    """An ``http(s)://`` URL fetched with no authentication."""

    url: str
    scheme: str
    host: str
    port: int | None
    path: str

    def headers(self, extra: dict[str, str]) -> dict[str, str]:
        return dict(extra)

    def head_headers(self) -> dict[str, str]:
        return {}

    def error(self, status: int, body: bytes) -> OSError:
        if status == 404:
            return FileNotFoundError(self.url)
        reason = http.client.responses.get(status, "")
        if status in (401, 403):
            return PermissionError(f"GET {self.url}: HTTP {status} {reason}")
        return HttpResponseError(self.url, status, reason, "")
