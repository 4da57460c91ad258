"""The direct route for ``azure://`` blobs: Blob Storage's own REST GET, on streamx's HTTP path.

The Azure SDK (and adlfs on top of it) reads a blob with plain ``GET``s of
``https://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB``, ranged when asked. streamx sends the
same GETs itself, so Azure gets what S3 and GCS get: bodies written by Rust (over rustls for
HTTPS), ranged parts on pooled connections, ``503 ServerBusy`` throttling waited out with
backoff, hedged parts and request accounting.

Credentials are resolved by Microsoft's libraries, as mosaicml-streaming resolves them:

- an account key (``AZURE_ACCOUNT_ACCESS_KEY``) signs a short read-only SAS for each blob
  with ``azure.storage.blob.generate_blob_sas``, so no request needs signing afterwards;
- with no key, ``azure.identity``'s chain (the CLI's login, then ``DefaultAzureCredential``)
  gives an OAuth token, sent as a bearer and renewed before it expires;
- ``AZURE_STORAGE_CONNECTION_STRING``, where set, names the endpoint and the key (or SAS), as
  it does for the SDK: that is how Azurite and other Blob-compatible servers are reached.

``STREAMX_AZURE_DIRECT=0`` turns the route off (adlfs serves the blob, as before).
"""

from __future__ import annotations

import datetime
import http.client
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, urlparse

from streamx.exceptions import HttpResponseError

__all__ = ["AzureRoute", "TokenSource", "route_for"]

# The REST version sent with bearer tokens (a SAS names its own, ``sv``).
API_VERSION = "2021-08-06"
_SCOPE = "https://storage.azure.com/.default"
# A SAS lives this long; a route serves one download.
_SAS_LIFETIME = datetime.timedelta(hours=6)
# A token is renewed when it has less than this left.
_TOKEN_MARGIN_S = 300.0


class Authorizer(Protocol):
    """Adds a request's credentials: a bearer header, or nothing (the SAS is in the path)."""

    def apply(self, headers: dict[str, str]) -> None: ...


class _AccessToken(Protocol):
    @property
    def token(self) -> str: ...
    @property
    def expires_on(self) -> int: ...


class TokenCredential(Protocol):
    """``azure.core.credentials.TokenCredential``: what ``azure.identity`` hands out."""

    def get_token(self, *scopes: str) -> _AccessToken: ...


class SasInPath:
    """The path carries a SAS: the headers need nothing."""

    def apply(self, headers: dict[str, str]) -> None:
        return None


class TokenSource:
    """A bearer token from an ``azure.identity`` credential, renewed before it expires."""

    def __init__(self, credential: TokenCredential) -> None:
        self._credential = credential
        self._lock = threading.Lock()
        self._token = ""
        self._expires = 0.0

    def apply(self, headers: dict[str, str]) -> None:
        with self._lock:
            if time.time() > self._expires - _TOKEN_MARGIN_S:
                found = self._credential.get_token(_SCOPE)
                self._token, self._expires = found.token, float(found.expires_on)
            token = self._token
        headers["Authorization"] = f"Bearer {token}"
        headers["x-ms-version"] = API_VERSION


@dataclass(frozen=True)
class AzureRoute:
    """Where and how to send one blob's GET."""

    url: str
    scheme: str
    host: str
    port: int | None
    path: str
    authorizer: Authorizer

    def headers(self, extra: dict[str, str]) -> dict[str, str]:
        headers = dict(extra)
        self.authorizer.apply(headers)
        return headers

    def head_headers(self) -> dict[str, str]:
        return self.headers({})

    def error(self, status: int, body: bytes) -> OSError:
        code, message = _xml_error(body)
        detail = ": ".join(part for part in (code, message) if part)
        if status == 404:
            return FileNotFoundError(f"{self.url}: {detail}" if detail else self.url)
        reason = http.client.responses.get(status, "")
        if status in (401, 403):
            return PermissionError(f"GET {self.url}: HTTP {status} {reason}: {detail}".rstrip(": "))
        return HttpResponseError(self.url, status, reason, detail)


def _xml_error(body: bytes) -> tuple[str, str]:
    """The ``Code`` and the first line of the ``Message`` of a Blob service error body."""
    text = body.decode("utf-8", "replace")
    code = re.search(r"<Code>([^<]*)</Code>", text)
    message = re.search(r"<Message>([^<]*)</Message>", text)
    first = message.group(1).strip().splitlines()[0] if message and message.group(1).strip() else ""
    return (code.group(1).strip() if code else ""), first


@dataclass(frozen=True)
class _Account:
    """The account's blob endpoint and its credential."""

    endpoint: str  # scheme://host[:port][/path], no trailing slash
    name: str
    key: str | None
    sas: str | None


def _account(netloc: str) -> _Account | None:
    connection = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if connection:
        return _from_connection_string(connection)
    name = os.environ.get("AZURE_ACCOUNT_NAME") or netloc.split(".", 1)[0]
    if not name:
        return None
    key = os.environ.get("AZURE_ACCOUNT_ACCESS_KEY") or None
    return _Account(f"https://{name}.blob.core.windows.net", name, key, None)


def _from_connection_string(connection: str) -> _Account | None:
    from azure.storage.blob import BlobServiceClient

    try:
        client = BlobServiceClient.from_connection_string(connection)
    except ValueError as err:
        raise ValueError(f"AZURE_STORAGE_CONNECTION_STRING: {err}") from err
    parsed = urlparse(client.url)
    endpoint = f"{parsed.scheme}://{parsed.netloc}{parsed.path.rstrip('/')}"
    key = getattr(client.credential, "account_key", None)
    sas = parsed.query or None
    if key is None and sas is None:
        return None  # a token-only string: adlfs reads it as the SDK does
    return _Account(endpoint, str(client.account_name), key, sas)


def _blob_sas(account: _Account, container: str, blob: str) -> str:
    from azure.storage.blob import BlobSasPermissions, generate_blob_sas

    expiry = datetime.datetime.now(datetime.timezone.utc) + _SAS_LIFETIME
    return str(
        generate_blob_sas(
            account.name,
            container,
            blob,
            account_key=account.key,
            permission=BlobSasPermissions(read=True),
            expiry=expiry,
        )
    )


_TOKEN_SOURCE: list[TokenSource] = []  # at most one per process, built when first needed
_TOKEN_LOCK = threading.Lock()


def _token_source() -> TokenSource | None:
    """The process's token source, built as mosaicml-streaming builds its chain: the CLI's
    login, then ``DefaultAzureCredential``; ``None`` without ``azure-identity``."""
    with _TOKEN_LOCK:
        if not _TOKEN_SOURCE:
            try:
                from azure.identity import (
                    AzureCliCredential,
                    ChainedTokenCredential,
                    DefaultAzureCredential,
                )
            except ImportError:
                return None
            chain = ChainedTokenCredential(AzureCliCredential(), DefaultAzureCredential())
            _TOKEN_SOURCE.append(TokenSource(chain))
        return _TOKEN_SOURCE[0]


def route_for(url: str, netloc: str, path: str) -> AzureRoute | None:
    """The direct route for ``azure://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB``, or
    ``None`` when adlfs must serve it (the route turned off, the SDK not installed, no blob
    named)."""
    if os.environ.get("STREAMX_AZURE_DIRECT", "1") == "0":
        return None
    container, _, blob = path.lstrip("/").partition("/")
    if not container or not blob:
        return None
    try:
        import azure.storage.blob  # noqa: F401  (the SAS and connection strings need it)
    except ImportError:
        return None
    account = _account(netloc)
    if account is None:
        return None
    authorizer: Authorizer
    query = ""
    if account.key is not None:
        query = _blob_sas(account, container, blob)
        authorizer = SasInPath()
    elif account.sas is not None:
        query, authorizer = account.sas, SasInPath()
    else:
        tokens = _token_source()
        if tokens is None:
            return None
        authorizer = tokens
    parsed = urlparse(account.endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return None
    where = f"{parsed.path}/{quote(container, safe='')}/{quote(blob, safe='/~')}"
    return AzureRoute(
        url=url,
        scheme=parsed.scheme,
        host=parsed.hostname,
        port=parsed.port,
        path=f"{where}?{query}" if query else where,
        authorizer=authorizer,
    )
