"""AWS Signature Version 4 for any S3 request without a query string or signed body:
the PUTs and bucket HEADs of uploads (``sigv4.sign_get`` covers GETs).

The body's integrity rides on an ``x-amz-checksum-crc32`` header instead, which S3 verifies
on arrival and stores, so the GETs of ``s3_direct`` verify it again later. The key
derivation is :mod:`streamx.storage.sigv4`'s; only the method differs from a GET.
``tests/storage/test_upload_direct.py`` checks it against botocore's signer and against a
server that verifies signatures.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timezone

from streamx.storage.sigv4 import ALGORITHM, UNSIGNED_PAYLOAD, Credentials, signing_key

__all__ = ["sign_request"]


def sign_request(
    method: str,
    host: str,
    quoted_path: str,
    region: str,
    credentials: Credentials,
    headers: dict[str, str],
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers of a signed ``method host/quoted_path`` (no query string).

    Args:
        method: ``PUT``, ``HEAD``...
        host: The ``Host`` header exactly as sent (with ``:port`` when not the default).
        quoted_path: The request path, already encoded with :func:`~sigv4.quote_key`.
        region: The signing region.
        credentials: Who signs.
        headers: Headers to send and sign: ``content-length``, the checksum, an ACL...
        now: The signing time (tests pin it); the current UTC time otherwise.

    Returns:
        Every header to send, ``authorization`` included, with lower-case names.

    Examples:
        >>> creds = Credentials("AKID", "SECRET")
        >>> length = {"content-length": "3"}
        >>> signed = sign_request("PUT", "h:9000", "/b/k", "us-east-1", creds, length)
        >>> signed["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKID/")
        True
    """
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    signed_headers = {"host": host, "x-amz-content-sha256": UNSIGNED_PAYLOAD, "x-amz-date": stamp}
    if credentials.token:
        signed_headers["x-amz-security-token"] = credentials.token
    for name, value in headers.items():
        signed_headers[name.lower()] = value
    names = sorted(signed_headers)
    canonical_headers = "".join(f"{n}:{' '.join(signed_headers[n].split())}\n" for n in names)
    signed = ";".join(names)
    canonical = "\n".join([method, quoted_path, "", canonical_headers, signed, UNSIGNED_PAYLOAD])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = signing_key(credentials.secret_key, day, region)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed_headers["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={signed}, Signature={signature}"
    )
    return signed_headers
