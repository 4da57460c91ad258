"""A local server answering the part of the Hugging Face Hub's HTTP API that
``huggingface_hub``'s ``HfFileSystem`` calls, over a directory of dataset repositories:
``ROOT/datasets/ORG/NAME/...``, at revision ``main``. Clients reach it through
``HF_ENDPOINT``.

Answered: repository info (``/api/datasets/ORG/NAME[/revision/REV]``), tree listings
(``/api/datasets/ORG/NAME/tree/REV/PATH``, recursive or not), paths info
(``/api/datasets/ORG/NAME/paths-info/REV``), and files with byte ranges
(``/datasets/ORG/NAME/resolve/REV/PATH``, GET and HEAD). A repository named in ``gated``
answers 401 with the Hub's error headers, as a gated or private repository does to a
client without access; a missing one 404 ``RepoNotFound``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

SHA = "0123456789abcdef0123456789abcdef01234567"
_LAST_COMMIT = {"id": SHA, "title": "data", "date": "2026-01-01T00:00:00.000Z"}


class HubServer:
    """The server on a free loopback port, serving ``root``."""

    def __init__(self, root: Path, gated: tuple[str, ...] = ()) -> None:
        self.root, self.gated = root, gated
        self.requests: list[str] = []
        self.bytes_sent = 0  # file bytes sent by `resolve` answers (for the benches)
        self.lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"hub": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HubServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def repo(self, org: str, name: str) -> Path:
        return self.root / "datasets" / org / name


def _entry(repo: Path, path: Path) -> dict[str, Any]:
    relative = path.relative_to(repo).as_posix()
    if path.is_dir():
        oid = hashlib.sha1(relative.encode()).hexdigest()
        return {"type": "directory", "oid": oid, "path": relative, "lastCommit": _LAST_COMMIT}
    size = path.stat().st_size
    return {
        "type": "file",
        "oid": _digest(path)[:40],
        "size": size,
        "path": relative,
        "lfs": {"oid": _digest(path), "size": size, "pointerSize": 134},
        "lastCommit": _LAST_COMMIT,
        "securityFileStatus": {"status": "safe", "avScan": {}, "pickleImportScan": {}},
    }


def _walk(folder: Path, recursive: bool) -> Iterator[Path]:
    for child in sorted(folder.iterdir()):
        yield child
        if recursive and child.is_dir():
            yield from _walk(child, True)


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj: Any) -> None:
        self._send(200, json.dumps(obj).encode(), {"Content-Type": "application/json"})

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        headers = {"Content-Type": "application/json", "X-Error-Code": code}
        self._send(status, body, {**headers, "X-Error-Message": message})

    def _repo(self, org: str, name: str) -> Path | None:
        if f"{org}/{name}" in self.hub.gated:
            message = (
                f"Access to dataset {org}/{name} is restricted. You must have access to it "
                "and be authenticated to access it. Please log in."
            )
            self._error(401, "GatedRepo", message)
            return None
        repo = self.hub.repo(org, name)
        if not repo.is_dir():
            self._error(404, "RepoNotFound", "Repository not found")
            return None
        return repo

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        url = urlparse(self.path)
        path = unquote(url.path)
        self.hub.requests.append(f"{self.command} {path}")
        if re.fullmatch(r"/api/datasets/[^/]+", path):  # an id without an organization
            self._error(404, "RepoNotFound", "Repository not found")
            return
        found = re.fullmatch(r"/api/datasets/([^/]+)/([^/]+)(?:/revision/([^/]+))?", path)
        if found:
            repo = self._repo(found[1], found[2])
            if repo is not None:
                files = [p for p in _walk(repo, True) if p.is_file()]
                siblings = [{"rfilename": p.relative_to(repo).as_posix()} for p in files]
                info = {"id": f"{found[1]}/{found[2]}", "sha": SHA, "private": False}
                self._json({**info, "siblings": siblings, "lastModified": _LAST_COMMIT["date"]})
            return
        found = re.fullmatch(r"/api/datasets/([^/]+)/([^/]+)/tree/([^/]+)/?(.*)", path)
        if found:
            repo = self._repo(found[1], found[2])
            if repo is not None:
                folder = repo / found[4] if found[4] else repo
                if not folder.is_dir():
                    self._error(404, "EntryNotFound", f"{found[4]} does not exist")
                    return
                recursive = parse_qs(url.query).get("recursive", ["false"])[0] == "true"
                self._json([_entry(repo, p) for p in _walk(folder, recursive)])
            return
        found = re.fullmatch(r"/datasets/([^/]+)/([^/]+)/resolve/([^/]+)/(.+)", path)
        if found:
            repo = self._repo(found[1], found[2])
            if repo is not None:
                self._file(repo / found[4])
            return
        self._error(404, "NotFound", f"no route for {path}")

    def do_POST(self) -> None:
        path = unquote(urlparse(self.path).path)
        self.hub.requests.append(f"POST {path}")
        length = int(self.headers.get("Content-Length", "0"))
        form = parse_qs(self.rfile.read(length).decode())
        found = re.fullmatch(r"/api/datasets/([^/]+)/([^/]+)/paths-info/([^/]+)", path)
        if not found:
            self._error(404, "NotFound", f"no route for {path}")
            return
        repo = self._repo(found[1], found[2])
        if repo is not None:
            wanted = [repo / p for p in form.get("paths", [])]
            self._json([_entry(repo, p) for p in wanted if p.exists()])

    def _file(self, target: Path) -> None:
        if not target.is_file():
            self._error(404, "EntryNotFound", f"{target.name} does not exist")
            return
        size = target.stat().st_size
        etag = f'"{_digest(target)}"'
        headers = {"ETag": etag, "X-Repo-Commit": SHA, "Accept-Ranges": "bytes"}
        headers["X-Linked-Size"] = str(size)
        headers["X-Linked-Etag"] = etag
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        start, end, status = 0, size - 1, 200
        if wanted is not None:
            start = int(wanted[1])
            end = min(int(wanted[2]) if wanted[2] else size - 1, size - 1)
            if start >= size:
                self._send(416, b"", {**headers, "Content-Range": f"bytes */{size}"})
                return
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
            status = 206
        self.send_response(status)
        for key, value in {"Content-Length": str(end + 1 - start), **headers}.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        with open(target, "rb") as f:  # the range only, in pieces: files may be large
            f.seek(start)
            left = end + 1 - start
            while left > 0:
                piece = f.read(min(left, 1 << 20))
                if not piece:
                    break
                self.wfile.write(piece)
                left -= len(piece)
                with self.hub.lock:
                    self.hub.bytes_sent += len(piece)


_DIGESTS: dict[tuple[str, int, int], str] = {}


def _digest(path: Path) -> str:
    """The file's sha256 (its LFS oid), computed once per size and mtime."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for piece in iter(lambda: f.read(1 << 20), b""):
                digest.update(piece)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def write_repo(root: Path, org: str, name: str, files: dict[str, bytes]) -> Path:
    """A repository holding ``files`` (relative path -> bytes)."""
    repo = root / "datasets" / org / name
    for relative, data in files.items():
        os.makedirs((repo / relative).parent, exist_ok=True)
        (repo / relative).write_bytes(data)
    return repo
