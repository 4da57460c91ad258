"""The direct route for ``gs://`` and ``gcs://`` objects: GCS's JSON API media download.

gcsfs reads an object's bytes with one plain HTTP GET
(``/download/storage/v1/b/BUCKET/o/KEY?alt=media``, ranged when asked) carrying an OAuth
bearer token. streamx sends the same GET through its own HTTP path, so GCS gets what S3 and
plain HTTP get: bodies written by Rust (over rustls for HTTPS), ranged parts on pooled
connections, ``429``/``503`` throttling waited out with backoff, hedged parts and request
accounting. The token comes from the gcsfs filesystem streamx would otherwise read through,
so the credentials are the same (``google_default``, the metadata server, a token file,
``anon`` for the emulator) and refreshed as gcsfs refreshes them.

gcsfs keeps serving what the route does not cover: HMAC keys (the S3-compatible XML API),
requester-pays buckets, and ``STREAMX_GCS_DIRECT=0``.
"""

from __future__ import annotations

import http.client
import json
import os
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, urlparse

from streamx.exceptions import HttpResponseError
from streamx.storage.filesystems import get_filesystem

__all__ = ["GcsRoute", "route_for"]

_API = "https://storage.googleapis.com"


class Credentials(Protocol):
    """gcsfs's ``GoogleCredentials``: adds (and refreshes) the ``Authorization`` header."""

    def apply(self, out: dict[str, str]) -> None: ...


@dataclass(frozen=True)
class GcsRoute:
    """Where and how to send one GCS object's GET."""

    url: str
    scheme: str
    host: str
    port: int | None
    path: str
    credentials: Credentials

    def headers(self, extra: dict[str, str]) -> dict[str, str]:
        headers = dict(extra)
        self.credentials.apply(headers)
        return headers

    def head_headers(self) -> dict[str, str]:
        return self.headers({})

    def error(self, status: int, body: bytes) -> OSError:
        message = _json_message(body)
        if status == 404:
            return FileNotFoundError(self.url)
        reason = http.client.responses.get(status, "")
        if status in (401, 403):
            return PermissionError(
                f"GET {self.url}: HTTP {status} {reason}: {message}".rstrip(": ")
            )
        return HttpResponseError(self.url, status, reason, message)


def _json_message(body: bytes) -> str:
    """The ``error.message`` of a JSON API error body, or its text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        found = json.loads(text)
    except ValueError:
        return text[:500]
    error = found.get("error") if isinstance(found, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message else text[:500]


def _endpoint() -> str:
    """The JSON API's base URL: the emulator's when ``STORAGE_EMULATOR_HOST`` names one
    (with ``http://`` added to a bare ``host:port``, as gcsfs does)."""
    emulator = os.environ.get("STORAGE_EMULATOR_HOST", "")
    if emulator in ("", "default"):
        return _API
    if not emulator.startswith(("http://", "https://")):
        return f"http://{emulator}"
    return emulator


def route_for(url: str, bucket: str, key: str) -> GcsRoute | None:
    """The direct route for ``url`` (``gs://bucket/key``), or ``None`` when gcsfs must serve
    it."""
    if os.environ.get("STREAMX_GCS_DIRECT", "1") == "0" or not bucket or not key:
        return None
    fs, _ = get_filesystem(url)
    credentials = getattr(fs, "credentials", None)
    if credentials is None or not callable(getattr(credentials, "apply", None)):
        return None  # not gcsfs (HMAC keys go through s3fs)
    if getattr(fs, "requester_pays", False):
        return None  # gcsfs adds the billed project to every request
    parsed = urlparse(_endpoint())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return None
    base = parsed.path.rstrip("/")
    path = f"{base}/download/storage/v1/b/{quote(bucket, safe='')}/o/{quote(key, safe='')}"
    return GcsRoute(
        url=url,
        scheme=parsed.scheme,
        host=parsed.hostname,
        port=parsed.port,
        path=f"{path}?alt=media",
        credentials=credentials,
    )
