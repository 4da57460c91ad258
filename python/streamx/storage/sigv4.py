"""AWS Signature Version 4 for S3 GET requests, with the payload left unsigned.

Only what a GetObject needs: the canonical request over the path, the query and a handful of
headers, and the ``Authorization`` header built from it. ``tests/storage/test_s3_direct.py``
checks the result against botocore's own signer and against a server that verifies it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import quote

__all__ = ["ALGORITHM", "Credentials", "quote_key", "sign_get", "signing_key"]

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"


@dataclass(frozen=True)
class Credentials:
    """Static AWS credentials (a session token comes with temporary ones)."""

    access_key: str
    secret_key: str
    token: str | None = None


def quote_key(path: str) -> str:
    """Percent-encodes an object path the way S3 canonicalizes it: every byte but the
    unreserved characters and ``/``."""
    return quote(path, safe="/~")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


@functools.lru_cache(maxsize=8)
def signing_key(secret: str, day: str, region: str) -> bytes:
    # Kept per (secret, day, region): four HMACs a request otherwise, a third of signing.
    key = _hmac(f"AWS4{secret}".encode(), day)
    for part in (region, "s3", "aws4_request"):
        key = _hmac(key, part)
    return key


def sign_get(
    host: str,
    quoted_path: str,
    region: str,
    credentials: Credentials,
    extra_headers: dict[str, str] | None = None,
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers of a signed ``GET host/quoted_path`` (no query string).

    Args:
        host: The ``Host`` header exactly as sent (with ``:port`` when not the default).
        quoted_path: The request path, already encoded with :func:`quote_key`.
        region: The signing region.
        credentials: Who signs.
        extra_headers: More headers to send and sign (e.g. ``x-amz-request-payer``).
        now: The signing time (tests pin it); the current UTC time otherwise.
    """
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    headers = {
        "host": host,
        "x-amz-content-sha256": UNSIGNED_PAYLOAD,
        "x-amz-date": stamp,
    }
    if credentials.token:
        headers["x-amz-security-token"] = credentials.token
    for name, value in (extra_headers or {}).items():
        headers[name.lower()] = value
    names = sorted(headers)
    canonical_headers = "".join(f"{n}:{' '.join(headers[n].split())}\n" for n in names)
    signed = ";".join(names)
    canonical = "\n".join(["GET", quoted_path, "", canonical_headers, signed, UNSIGNED_PAYLOAD])
    scope = f"{day}/{region}/s3/aws4_request"
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = "\n".join([ALGORITHM, stamp, scope, digest])
    signature = hmac.new(
        signing_key(credentials.secret_key, day, region), to_sign.encode(), hashlib.sha256
    ).hexdigest()
    headers["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={signed}, Signature={signature}"
    )
    return headers
