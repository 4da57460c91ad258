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

import atexit
import base64
import hashlib
import http.client
import os
import re
import ssl
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from streamx.exceptions import ChecksumMismatchError, S3ResponseError
from streamx.storage.sigv4 import Credentials, quote_key, sign_get

__all__ = [
    "AWS_CREDENTIAL_ENV",
    "ChecksumMismatchError",
    "S3ResponseError",
    "S3Route",
    "forget_credentials",
    "route_for",
]

_CHUNK = 1 << 20
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


# Profile settings that change the endpoint, addressing or TLS of botocore's requests.
_BOTOCORE_ONLY_PROFILE_KEYS = (
    "endpoint_url",
    "services",
    "s3",
    "ca_bundle",
    "use_fips_endpoint",
    "use_dualstack_endpoint",
)
# What the botocore chain's answer depends on, besides files it reads.
AWS_CREDENTIAL_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_EC2_METADATA_DISABLED",
)
_RESOLVED: dict[tuple[Any, ...], tuple[CredentialSource, str] | None] = {}


# What a keep-alive connection the server has since closed raises on its next request.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


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

    def fetch(self, dest: str, timeout: float, deadline: float) -> int:
        """Writes the object to ``dest`` (opened for writing, truncated) and returns the
        ``Content-Length`` S3 announced. Raises ``FileNotFoundError`` for a missing key,
        ``S3ResponseError`` for other error statuses and ``OSError``/``TimeoutError`` for
        network failures; a body cut short raises ``http.client.IncompleteRead``."""
        extra = {"x-amz-checksum-mode": "ENABLED"}
        if self.requester_pays:
            extra["x-amz-request-payer"] = "requester"
        host = self.host if self.port is None else f"{self.host}:{self.port}"
        headers = sign_get(host, self.path, self.region, self.credentials.current(), extra)
        pool = _pool_for(self.scheme, self.host, self.port)
        conn, reused = pool.take(timeout)
        try:
            try:
                response = _send(conn, self.path, headers)
            except _STALE:
                if not reused:
                    raise
                # The server closed the idle connection: not a failed attempt, ask again.
                conn.close()
                conn, _ = pool.take(timeout, fresh=True)
                response = _send(conn, self.path, headers)
            if response.status != 200:
                raise _error(self.url, response.status, response.read(64 << 10))
            length = int(response.getheader("Content-Length", "-1"))
            _copy_body(response, dest, deadline, self.url, _checksum_of(response))
        except BaseException:
            conn.close()
            raise
        pool.give_back(conn)
        return length


def _send(
    conn: http.client.HTTPConnection, path: str, headers: dict[str, str]
) -> http.client.HTTPResponse:
    conn.request("GET", path, headers=headers)
    return conn.getresponse()


def _checksum_of(response: http.client.HTTPResponse) -> tuple[str, Any, bytes] | None:
    """(header, running hash, expected digest) for the first checksum that can be verified."""
    for header, make in _CHECKSUMS.items():
        value = response.getheader(header)
        if value and "-" not in value:
            return header, make(), base64.b64decode(value)
    return None


def _copy_body(
    response: http.client.HTTPResponse,
    dest: str,
    deadline: float,
    url: str,
    checksum: tuple[str, Any, bytes] | None,
) -> None:
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    with open(dest, "wb") as out:
        while n := response.readinto(view):
            out.write(view[:n])
            if checksum is not None:
                checksum[1].update(view[:n])
            if time.monotonic() > deadline:
                raise TimeoutError(f"download of {url} ran past its deadline")
    if checksum is not None and checksum[1].digest() != checksum[2]:
        raise ChecksumMismatchError(f"GET {url}: the body does not match its {checksum[0]}")


def _error(url: str, status: int, body: bytes) -> OSError:
    text = body.decode("utf-8", "replace")
    code = _xml_field(text, "Code") or http.client.responses.get(status, "")
    message = _xml_field(text, "Message")
    if status == 404:
        return FileNotFoundError(url)
    if status == 403:
        return PermissionError(f"GET {url}: HTTP 403 {code}: {message}")
    if status in (301, 307) or code == "PermanentRedirect":
        region = _xml_field(text, "Region") or "?"
        message = f"{message} (the bucket is in region {region}; set AWS_DEFAULT_REGION)"
    return S3ResponseError(url, status, code, message)


def _xml_field(text: str, name: str) -> str:
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


def forget_credentials() -> None:
    """Drop what botocore's chain resolved (tests use this after rewriting its files)."""
    _RESOLVED.clear()


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
    fingerprint = (os.getpid(), *(env.get(n) for n in AWS_CREDENTIAL_ENV))
    if fingerprint not in _RESOLVED:
        _RESOLVED.clear()
        _RESOLVED[fingerprint] = _resolve_with_botocore()
    found = _RESOLVED[fingerprint]
    if found is None:
        return None
    source, configured_region = found
    return source, region or configured_region


def _resolve_with_botocore() -> tuple[CredentialSource, str] | None:
    try:
        import botocore.session
    except ImportError:
        return None
    try:
        session = botocore.session.get_session()
        profile = session.get_scoped_config()
        if any(profile.get(name) for name in _BOTOCORE_ONLY_PROFILE_KEYS):
            return None
        found = session.get_credentials()
    except Exception:
        return None  # s3fs reports the problem with botocore's own words
    if found is None:
        return None  # no credentials: public buckets go unsigned through s3fs
    return BotocoreCredentials(found), str(session.get_config_variable("region") or "")


class _Pool:
    """Idle keep-alive connections to one host; a connection is used by one thread at a time."""

    def __init__(self, scheme: str, host: str, port: int | None) -> None:
        self._scheme, self._host, self._port = scheme, host, port
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def take(self, timeout: float, fresh: bool = False) -> tuple[http.client.HTTPConnection, bool]:
        """A connection (idle if there is one, unless ``fresh``) and whether it was idle."""
        conn = None
        if not fresh:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
        reused = conn is not None
        if conn is None:
            if self._scheme == "https":
                conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=timeout, context=_tls_context()
                )
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        else:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
        return conn, reused

    def give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append(conn)

    def close_idle(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


_POOLS: dict[tuple[str, str, int | None], _Pool] = {}
_POOLS_LOCK = threading.Lock()
_POOLS_PID = os.getpid()
_TLS: list[ssl.SSLContext] = []


def _pool_for(scheme: str, host: str, port: int | None) -> _Pool:
    global _POOLS_PID
    with _POOLS_LOCK:
        if os.getpid() != _POOLS_PID:
            # Sockets inherited through fork belong to the parent's conversations; closing
            # this process's copies leaves the parent's connections open.
            _close_all()
            _POOLS_PID = os.getpid()
        pool = _POOLS.get((scheme, host, port))
        if pool is None:
            pool = _POOLS[(scheme, host, port)] = _Pool(scheme, host, port)
        return pool


@atexit.register
def _close_all() -> None:
    for pool in _POOLS.values():
        pool.close_idle()
    _POOLS.clear()


def _tls_context() -> ssl.SSLContext:
    if not _TLS:
        bundle = os.environ.get("AWS_CA_BUNDLE") or None
        _TLS.append(ssl.create_default_context(cafile=bundle))
    return _TLS[0]
