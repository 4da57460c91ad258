"""A loopback server answering the part of Azure Blob Storage's REST API that a reader calls.

No Azure-compatible server runs on this machine (Azurite needs npm's registry, and neither PyPI
nor Debian packages one), so the tests start this one. It serves the files under ``root`` as
``/ACCOUNT/CONTAINER/BLOB`` (the path-style endpoint Azurite uses, reached through
``AZURE_STORAGE_CONNECTION_STRING``) and answers ``GET`` and ``HEAD`` as the service does:
``Range`` and ``x-ms-range`` (206 with ``Content-Range``), ``ETag`` and ``If-Match`` (412
``ConditionNotMet``), and XML error bodies (``BlobNotFound``, ``AuthenticationFailed``).

Every request must be authorized. A SAS is checked by signing the same fields again with the
account key through the SDK's own ``generate_blob_sas`` (so a signature the SDK would not
make is refused), and its expiry is enforced. A bearer token must be ``token`` and come with
``x-ms-version``.
"""

from __future__ import annotations

import datetime
import email.utils
import hashlib
import http.server
import os
import re
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["ACCOUNT", "KEY", "BlobServer", "connection_string"]

ACCOUNT = "devstoreaccount1"
# A made-up key of the right shape (64 random bytes, base64).
KEY = "c3RyZWFteC10ZXN0LWtleS1ub3QtYS1yZWFsLW9uZS0wMTIzNDU2Nzg5YWJjZGVmZ2hpams="


def connection_string(endpoint: str, key: str = KEY) -> str:
    """The connection string an Azurite user sets, for this server's ``endpoint``."""
    scheme = endpoint.split("://", 1)[0]
    return (
        f"DefaultEndpointsProtocol={scheme};AccountName={ACCOUNT};AccountKey={key};"
        f"BlobEndpoint={endpoint}/{ACCOUNT};"
    )


@dataclass
class BlobServer:
    root: Path
    token: str = "test-bearer-token"
    busy_first: int = 0  # answer this many GETs 503 ServerBusy (Retry-After: 1) first
    tls: tuple[Path, Path] | None = None  # (certificate chain, key)
    log: list[tuple[str, str, int, str]] = field(
        default_factory=list
    )  # method, blob, status, range
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> BlobServer:
        server = self

        class Handler(_Handler):
            blobs = server

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        if self.tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._httpd.server_address[1]}"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def record(self, method: str, blob: str, status: int, ranged: str) -> None:
        with self._lock:
            self.log.append((method, blob, status, ranged))

    def take_busy(self) -> bool:
        with self._lock:
            if self.busy_first <= 0:
                return False
            self.busy_first -= 1
            return True


def _error_body(code: str, message: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        f"<Error><Code>{code}</Code><Message>{message}\nRequestId:test</Message></Error>"
    ).encode()


def _sas_is_valid(query: dict[str, str], container: str, blob: str) -> bool:
    from azure.storage.blob import generate_blob_sas

    try:
        expiry = datetime.datetime.strptime(query["se"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc
        )
        permission = query["sp"]
    except (KeyError, ValueError):
        return False
    if expiry < datetime.datetime.now(datetime.timezone.utc) or "r" not in permission:
        return False
    again = generate_blob_sas(
        ACCOUNT, container, blob, account_key=KEY, permission=permission, expiry=expiry
    )
    signed = parse_qs(again)
    return signed.get("sig") == [query.get("sig")] and signed.get("sv") == [query.get("sv")]


_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    blobs: BlobServer

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _send(self, status: int, headers: dict[str, str], body: bytes, with_body: bool) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-ms-request-id", "test")
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def _fail(self, status: int, code: str, message: str, with_body: bool, blob: str) -> None:
        self.blobs.record(self.command, blob, status, "")
        headers = {"Content-Type": "application/xml", "x-ms-error-code": code}
        if status == 503:
            headers["Retry-After"] = "1"
        self._send(status, headers, _error_body(code, message), with_body)

    def _answer(self, body: bool) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        account, _, rest = unquote(parts.path).lstrip("/").partition("/")
        container, _, blob = rest.partition("/")
        if account != ACCOUNT or not container or not blob:
            return self._fail(400, "InvalidUri", "The requested URI is not valid.", body, blob)
        if not self._authorized(query, container, blob):
            message = "The request is not authorized: signature or token mismatch."
            return self._fail(403, "AuthenticationFailed", message, body, blob)
        if self.command == "GET" and self.blobs.take_busy():
            return self._fail(503, "ServerBusy", "The server is busy.", body, blob)
        path = self.blobs.root / container / blob
        if not path.is_file():
            return self._fail(404, "BlobNotFound", "The specified blob does not exist.", body, blob)
        data = path.read_bytes()
        stat = os.stat(path)
        etag = '"0x' + hashlib.sha1(data).hexdigest()[:16].upper() + '"'
        wanted = self.headers.get("If-Match")
        if wanted not in (None, "*", etag):
            return self._fail(412, "ConditionNotMet", "The condition was not met.", body, blob)
        headers = {
            "ETag": etag,
            "Last-Modified": email.utils.formatdate(stat.st_mtime, usegmt=True),
            "Accept-Ranges": "bytes",
            "x-ms-blob-type": "BlockBlob",
            "Content-Type": "application/octet-stream",
        }
        ranged = self.headers.get("x-ms-range") or self.headers.get("Range") or ""
        found = _RANGE.match(ranged) if ranged else None
        if ranged and found is None:
            return self._fail(416, "InvalidRange", "The range is not valid.", body, blob)
        status, chunk = 200, data
        if found is not None:
            start = int(found.group(1))
            end = min(int(found.group(2)) if found.group(2) else len(data) - 1, len(data) - 1)
            if start >= len(data):
                return self._fail(416, "InvalidRange", "The range is not satisfiable.", body, blob)
            status, chunk = 206, data[start : end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        self.blobs.record(self.command, blob, status, ranged)
        self._send(status, headers, chunk, body)

    def _authorized(self, query: dict[str, str], container: str, blob: str) -> bool:
        if "sig" in query:
            return _sas_is_valid(query, container, blob)
        bearer = self.headers.get("Authorization", "")
        return bearer == f"Bearer {self.blobs.token}" and bool(self.headers.get("x-ms-version"))
