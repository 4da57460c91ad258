"""The whole-object checksums an S3-style response announces (``x-amz-checksum-*``) that a
download can verify as its body streams by."""

from __future__ import annotations

import base64
import hashlib
import http.client
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["checksum_of"]


class _Crc32:
    def __init__(self) -> None:
        self.value = 0

    def update(self, data: memoryview) -> None:
        self.value = zlib.crc32(data, self.value)

    def digest(self) -> bytes:
        return self.value.to_bytes(4, "big")


# x-amz-checksum-* headers this module can verify (botocore verifies the same ones when it
# can); composite multipart checksums ("...-N") are not whole-object checksums and are skipped.
_CHECKSUMS: dict[str, Callable[[], Any]] = {
    "x-amz-checksum-crc32": _Crc32,
    "x-amz-checksum-sha1": hashlib.sha1,
    "x-amz-checksum-sha256": hashlib.sha256,
}


def checksum_of(response: http.client.HTTPResponse) -> tuple[str, Any, bytes] | None:
    """(header, running hash, expected digest) for the first checksum that can be verified."""
    for header, make in _CHECKSUMS.items():
        value = response.getheader(header)
        if value and "-" not in value:
            return header, make(), base64.b64decode(value)
    return None
