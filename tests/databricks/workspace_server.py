"""A stand-in for a Databricks workspace: the REST calls the Databricks SDK makes to read and
write files, served on loopback from a directory, behind a bearer token.

It answers what the SDK (0.162) sends, read from its source and seen on the wire:

* Files API 2.0 (Unity Catalog volumes): ``GET``/``HEAD``/``PUT``/``DELETE``
  ``/api/2.0/fs/files/<path>`` (``GET`` takes ``Range`` and ``If-Unmodified-Since``, which
  the SDK sends to resume a broken body) and ``GET``/``HEAD``/``PUT``
  ``/api/2.0/fs/directories/<path>``;
* the DBFS API (the legacy root): ``get-status``, ``read``, ``list``, ``create``,
  ``add-block``, ``close``, ``mkdirs``, ``delete`` under ``/api/2.0/dbfs/``;
* with ``presigned`` set, ``POST /api/2.0/fs/create-download-url``, which the SDK tries
  first: the answer sends it to ``/presigned/<path>`` on this server, a stand-in for the
  cloud store (served without the token, as a presigned URL is);
* anything else (the presigned-URL calls without ``presigned``, multipart uploads, the
  SDK's host-metadata probe) is answered as a workspace without that feature answers: 404
  ``ENDPOINT_NOT_FOUND``, after which the SDK goes on to the Files API.

``fault`` makes the Files API's bodies (of the paths containing ``fault_on``) fail:
``"cut"`` announces the whole length and closes the connection half-way (every time,
resumed requests included); ``"stall"`` sends nothing and holds the connection until the
server stops, and does the same to uploads (``PUT``) of those paths. ``refused`` counts the
requests that came without the token.
"""

from __future__ import annotations

import base64
import email.utils
import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

__all__ = ["WorkspaceServer"]

_FILES = "/api/2.0/fs/files"
_DIRECTORIES = "/api/2.0/fs/directories"
_DBFS = "/api/2.0/dbfs/"


class WorkspaceServer:
    """Serves ``root`` as a workspace's volumes and DBFS; use as a context manager."""

    def __init__(self, root: Path, token: str) -> None:
        self.root, self.token = root, token
        self.fault: str | None = None
        self.fault_on = ""  # the fault hits only paths that contain this
        self.refused = 0  # requests without the token
        self.presigned = False
        self.presigned_tokens: list[str | None] = []  # the Authorization of presigned GETs
        self.requests: list[tuple[str, str]] = []  # (method, path with query)
        self._release = threading.Event()
        self._handles: dict[int, tuple[Path, bytearray]] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                with server._lock:
                    server.requests.append((self.command, self.path))
                try:
                    server._answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _any

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.host = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> WorkspaceServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def local(self, path: str) -> Path:
        """Where the workspace path ``path`` is stored."""
        return self.root / path.lstrip("/")

    # -- dispatch ---------------------------------------------------------------------

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        url = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        body = _read_body(h)
        if url.path.startswith(("/api/", "/.well-known/")) and not self._authorized(h, url.path):
            with self._lock:
                self.refused += 1
            _json(h, 401, {"error_code": "UNAUTHENTICATED", "message": "Invalid access token."})
        elif url.path.startswith("/presigned/") and h.command == "GET":
            with self._lock:
                self.presigned_tokens.append(h.headers.get("Authorization"))
            self._file(h, unquote(url.path[len("/presigned") :]), body)
        elif url.path == "/api/2.0/fs/create-download-url" and self.presigned:
            self._download_url(h, query.get("path", ""))
        elif url.path.startswith(_FILES + "/") and "action" not in query:
            self._file(h, unquote(url.path[len(_FILES) :]), body)
        elif url.path.startswith(_DIRECTORIES + "/"):
            self._directory(h, unquote(url.path[len(_DIRECTORIES) :]))
        elif url.path.startswith(_DBFS):
            self._dbfs(h, url.path[len(_DBFS) :], query, body)
        else:
            message = f"No API found for '{h.command} {url.path}'"
            _json(h, 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": message})

    def _authorized(self, h: BaseHTTPRequestHandler, path: str) -> bool:
        if path.startswith("/.well-known/"):
            return True  # the SDK's unauthenticated host-metadata probe
        return h.headers.get("Authorization") == f"Bearer {self.token}"

    def _download_url(self, h: BaseHTTPRequestHandler, path: str) -> None:
        if not self.local(path).is_file():
            _json(h, 404, {"error_code": "NOT_FOUND", "message": f"The file {path} does not exist"})
            return
        # The cloud store's headers come with the URL; the SDK sends them back.
        headers = [{"name": "x-presigned", "value": "yes"}]
        _json(h, 200, {"url": f"{self.host}/presigned{quote(path)}", "headers": headers})

    # -- Files API --------------------------------------------------------------------

    def _file(self, h: BaseHTTPRequestHandler, path: str, body: bytes) -> None:
        target = self.local(path)
        if h.command == "PUT":
            if self.fault == "stall" and self.fault_on in path:
                self._release.wait()  # the body is read; the answer never comes
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            _empty(h, 204)
            return
        if not target.is_file():
            _json(h, 404, {"error_code": "NOT_FOUND", "message": f"The file {path} does not exist"})
            return
        if h.command == "DELETE":
            target.unlink()
            _empty(h, 204)
            return
        size = target.stat().st_size
        modified = email.utils.formatdate(target.stat().st_mtime, usegmt=True)
        if h.command == "HEAD":
            _empty(h, 200, {"Content-Length": str(size), "Last-Modified": modified})
            return
        if h.headers.get("If-Unmodified-Since", modified) != modified:
            _json(h, 412, {"error_code": "FAILED_PRECONDITION", "message": "changed"})
            return
        start, end = _range(h.headers.get("Range"), size)
        status = 206 if h.headers.get("Range") else 200
        h.send_response(status)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(end - start))
        h.send_header("Last-Modified", modified)
        if status == 206:
            h.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        h.end_headers()
        self._send(h, path, target.read_bytes()[start:end])

    def _send(self, h: BaseHTTPRequestHandler, path: str, data: bytes) -> None:
        if self.fault_on not in path:
            h.wfile.write(data)
        elif self.fault == "stall":
            self._release.wait()
        elif self.fault == "cut":
            h.wfile.write(data[: len(data) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
        else:
            h.wfile.write(data)

    def _directory(self, h: BaseHTTPRequestHandler, path: str) -> None:
        target = self.local(path)
        if h.command == "PUT":
            target.mkdir(parents=True, exist_ok=True)
            _empty(h, 204)
        elif not target.is_dir():
            _json(
                h,
                404,
                {"error_code": "NOT_FOUND", "message": f"The directory {path} does not exist"},
            )
        elif h.command == "HEAD":
            _empty(h, 200)
        else:
            contents = [_entry(path, child) for child in sorted(target.iterdir())]
            _json(h, 200, {"contents": contents} if contents else {})

    # -- DBFS API ---------------------------------------------------------------------

    def _dbfs(
        self, h: BaseHTTPRequestHandler, call: str, query: dict[str, str], body: bytes
    ) -> None:
        args: dict[str, Any] = {**query, **(json.loads(body) if body else {})}
        if call in ("create", "add-block", "close"):
            self._dbfs_write(h, call, args)
            return
        path = str(args.get("path", ""))
        target = self.local(path)
        if call == "mkdirs":
            target.mkdir(parents=True, exist_ok=True)
            _json(h, 200, {})
        elif not target.exists():
            message = f"No file or directory exists on path {path}."
            _json(h, 404, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": message})
        elif call == "get-status":
            _json(h, 200, _dbfs_status(path, target))
        elif call == "list":
            children = sorted(target.iterdir()) if target.is_dir() else [target]
            names = [f"{path.rstrip('/')}/{c.name}" if target.is_dir() else path for c in children]
            _json(h, 200, {"files": [_dbfs_status(n, c) for n, c in zip(names, children)]})
        elif call == "read":
            offset, length = int(args.get("offset", 0)), int(args.get("length", 1 << 20))
            data = target.read_bytes()[offset : offset + length]
            _json(h, 200, {"bytes_read": len(data), "data": base64.b64encode(data).decode()})
        elif call == "delete":
            shutil.rmtree(target) if target.is_dir() else target.unlink()
            _json(h, 200, {})
        else:
            _json(h, 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": f"No API {call}"})

    def _dbfs_write(self, h: BaseHTTPRequestHandler, call: str, args: dict[str, Any]) -> None:
        with self._lock:
            if call == "create":
                handle = len(self._handles) + 1
                self._handles[handle] = (self.local(str(args["path"])), bytearray())
                _json(h, 200, {"handle": handle})
                return
            target, data = self._handles[int(args["handle"])]
            if call == "add-block":
                data += base64.b64decode(args["data"])
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(bytes(data))
                del self._handles[int(args["handle"])]
        _json(h, 200, {})


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    length = int(h.headers.get("Content-Length") or 0)
    return h.rfile.read(length) if length else b""


def _range(header: str | None, size: int) -> tuple[int, int]:
    if not header:
        return 0, size
    first, _, last = header.removeprefix("bytes=").partition("-")
    return int(first), min(int(last) + 1, size) if last else size


def _entry(parent: str, child: Path) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": f"{parent.rstrip('/')}/{child.name}",
        "name": child.name,
        "is_directory": child.is_dir(),
    }
    if child.is_file():
        entry["file_size"] = child.stat().st_size
    return entry


def _dbfs_status(path: str, target: Path) -> dict[str, Any]:
    size = target.stat().st_size if target.is_file() else 0
    return {"path": path, "is_dir": target.is_dir(), "file_size": size}


def _json(h: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(data)


def _empty(h: BaseHTTPRequestHandler, status: int, headers: dict[str, str] | None = None) -> None:
    h.send_response(status)
    for name, value in (headers or {"Content-Length": "0"}).items():
        h.send_header(name, value)
    h.end_headers()
