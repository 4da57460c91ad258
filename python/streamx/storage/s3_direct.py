"""S3 downloads as plain signed HTTP GETs, without building a botocore client.

Importing s3fs and building its client (botocore's service model and endpoint rules) costs
about half a second of CPU in every process before the first byte arrives: in the main
process for ``index.json`` and again in each DataLoader worker. When the configuration is
simple enough to be sure of the request botocore would make (credentials, and either
``S3_ENDPOINT_URL`` or a region), a GET is signed here and sent over a pooled
``http.client`` connection instead. Keys in the environment are used as they are; other
credentials come from botocore's chain, which costs an import but no client. Public buckets,
profiles that set endpoints or TLS, uploads and listings go through s3fs as before.
``STREAMX_S3_DIRECT=0`` turns this path off.
"""

from __future__ import annotations

import http.client
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from streamx.exceptions import ChecksumMismatchError, S3ResponseError
from streamx.storage.aws_credentials import (
    AWS_CREDENTIAL_ENV,
    CREDENTIAL_PLACES,
    botocore_chain,
    forget_credentials,
    has_credentials,
)
from streamx.storage.sigv4 import Credentials, quote_key, sign_get
from streamx.storage.sigv4_request import sign_request

__all__ = [
    "AWS_CREDENTIAL_ENV",
    "CREDENTIAL_PLACES",
    "ChecksumMismatchError",
    "S3ResponseError",
    "S3Route",
    "forget_credentials",
    "has_credentials",
    "route_for",
    "xml_field",
]

# A bucket name that can be a DNS label (no dots, so TLS wildcard certificates match).
_VIRTUAL_HOST_BUCKET = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
# Settings that change which endpoint or signature botocore would use: leave them to it.
_BOTOCORE_ONLY_ENV = (
    "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT",
    "AWS_S3_US_EAST_1_REGIONAL_ENDPOINT",
    "AWS_S3_USE_ARN_REGION",
    "AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS",
)


class CredentialSource:
    """Hands out the credentials to sign the next request with."""

    def current(self) -> Credentials:
        raise NotImplementedError


class StaticCredentials(CredentialSource):
    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials

    def current(self) -> Credentials:
        return self._credentials


class BotocoreCredentials(CredentialSource):
    """botocore's resolved credentials; temporary ones refresh themselves when read."""

    def __init__(self, found: Any) -> None:
        self._found = found

    def current(self) -> Credentials:
        frozen = self._found.get_frozen_credentials()
        return Credentials(frozen.access_key, frozen.secret_key, frozen.token or None)


@dataclass(frozen=True)
class S3Route:
    """Where and how to send one object's GET."""

    url: str
    scheme: str
    host: str
    port: int | None
    path: str
    region: str
    credentials: CredentialSource
    requester_pays: bool

    def headers(self, extra: dict[str, str]) -> dict[str, str]:
        """Signed headers for a GET with ``extra`` headers (a ``range``, say). A whole-object
        GET asks for the object's stored checksum, which ``http_get`` then verifies."""
        extra = dict(extra)
        if "range" not in extra:
            extra["x-amz-checksum-mode"] = "ENABLED"
        if self.requester_pays:
            extra["x-amz-request-payer"] = "requester"
        host = self.host if self.port is None else f"{self.host}:{self.port}"
        return sign_get(host, self.path, self.region, self.credentials.current(), extra)

    def head_headers(self) -> dict[str, str]:
        """Signed headers for a ``HEAD`` of the object (its size and ``ETag``)."""
        extra = {"x-amz-request-payer": "requester"} if self.requester_pays else {}
        host = self.host if self.port is None else f"{self.host}:{self.port}"
        return sign_request("HEAD", host, self.path, self.region, self.credentials.current(), extra)

    def error(self, status: int, body: bytes) -> OSError:
        return _error(self.url, status, body)


def _error(url: str, status: int, body: bytes) -> OSError:
    text = body.decode("utf-8", "replace")
    code = xml_field(text, "Code") or http.client.responses.get(status, "")
    message = xml_field(text, "Message")
    if status == 404:
        return FileNotFoundError(url)
    if status == 403:
        return PermissionError(f"GET {url}: HTTP 403 {code}: {message}")
    if status in (301, 307) or code == "PermanentRedirect":
        region = xml_field(text, "Region") or "?"
        message = f"{message} (the bucket is in region {region}; set AWS_DEFAULT_REGION)"
    return S3ResponseError(url, status, code, message)


def xml_field(text: str, name: str) -> str:
    found = re.search(f"<{name}>(.*?)</{name}>", text, re.S)
    return found.group(1).strip() if found else ""


def route_for(bucket: str, key: str) -> S3Route | None:
    """The direct route for ``s3://bucket/key``, or ``None`` when s3fs must serve it."""
    env = os.environ
    if env.get("STREAMX_S3_DIRECT", "1") == "0" or any(env.get(n) for n in _BOTOCORE_ONLY_ENV):
        return None
    if not bucket or not key:
        return None
    resolved = _credentials_and_region()
    if resolved is None:
        return None
    credentials, region = resolved
    endpoint = (
        env.get("S3_ENDPOINT_URL") or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    )
    payers = {b.strip() for b in env.get("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "").split(",")}
    quoted = quote_key(key)
    if endpoint:
        parsed = urlparse(endpoint)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            return None
        base = parsed.path.rstrip("/")
        # Custom endpoints are addressed path-style, as botocore does for them by default.
        path = f"{base}/{quote_key(bucket)}/{quoted}"
        scheme, host, port = parsed.scheme, parsed.hostname, parsed.port
        region = region or "us-east-1"
    elif region and _VIRTUAL_HOST_BUCKET.match(bucket):
        scheme, host, port = "https", f"{bucket}.s3.{region}.amazonaws.com", None
        path = f"/{quoted}"
    else:
        return None
    return S3Route(
        url=f"s3://{bucket}/{key}",
        scheme=scheme,
        host=host,
        port=port,
        path=path,
        region=region,
        credentials=credentials,
        requester_pays=bucket in payers,
    )


def _credentials_and_region() -> tuple[CredentialSource, str] | None:
    """Static credentials from the environment without importing botocore; otherwise what
    botocore's own chain resolves (profiles, SSO, roles, instance metadata), unless the
    profile configures endpoints or TLS in ways only botocore applies."""
    env = os.environ
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or ""
    access, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if access and secret:
        static = Credentials(access, secret, env.get("AWS_SESSION_TOKEN") or None)
        return StaticCredentials(static), region
    chain = botocore_chain()
    # No credentials (public buckets go unsigned through s3fs), a failed lookup (s3fs reports
    # it in botocore's words) or a profile only botocore can apply: not the direct route.
    if not chain.found or chain.botocore_only:
        return None
    return BotocoreCredentials(chain.credentials), region or chain.region
