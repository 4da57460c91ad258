"""The files of an in-place source (a file, a directory or a glob of Parquet or tar files),
their versions, and byte ranges of them."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from streamx.exceptions import (
    CorruptIndexError,
    HttpResponseError,
    ObjectChangedError,
    RemoteTooLargeError,
    SizeMismatchError,
    StaleIndexError,
    TlsCertificateError,
    TruncatedDownloadError,
)
from streamx.storage import azure_direct, s3_direct, throttle
from streamx.storage.download import download_index
from streamx.storage.filesystems import fsspec_errors, get_filesystem, split_url
from streamx.storage.http_source import HttpSource, plain_target
from streamx.storage.http_target import Target
from streamx.storage.object_sources import source_for
from streamx.storage.throttle import THROTTLE_STATUSES, ThrottledError

__all__ = [
    "RemoteFile",
    "changed_since",
    "check_unchanged",
    "confirm_unchanged",
    "list_files",
    "read_json_bounded",
    "read_range",
    "stat_file",
]


@dataclass(frozen=True)
class RemoteFile:
    """One source file: its URL, size and version (ETag, else mtime)."""

    url: str
    size: int
    version: str


def _version(info: dict[str, Any]) -> str:
    # blob_id: the Hugging Face Hub's content hash of a file.
    for key in ("ETag", "etag", "blob_id", "LastModified", "last_modified", "mtime", "updated"):
        if info.get(key) is not None:
            return str(info[key])
    return ""


def _url(scheme: str, netloc: str, path: str, original: str) -> str:
    if scheme in ("", "file"):
        return path
    if scheme in ("http", "https"):
        return path if "://" in path else original
    return f"{scheme}://{path}" if path.startswith(netloc) else f"{scheme}://{netloc}/{path}"


def list_files(source: str, suffix: str = ".parquet", kind: str = "Parquet") -> list[RemoteFile]:
    """The files named ``*suffix`` under ``source``, sorted by URL (a file is itself).

    A source with braces names its files as WebDataset names shards, by bash's brace
    expansion: ``shard-{000..041}.tar`` is 42 files, in that order, each of which must exist
    (a store that cannot list, like a plain HTTP server, is read this way).

    Raises:
        FileNotFoundError: If ``source`` names no such file (the message says ``kind``), or
            a file its braces name is missing.
    """
    if "{" in source and "}" in source:
        return _expanded(source)
    with fsspec_errors(source):
        return _listed(source, suffix, kind)


def _listed(source: str, suffix: str, kind: str) -> list[RemoteFile]:
    scheme, netloc, named = split_url(source)
    if named.endswith(suffix) and not any(c in named for c in "*?["):
        one = _stat_direct(source)  # one file: no file system to import or build for it
        if one is not None:
            return [one]
    fs, path = get_filesystem(source)
    if any(c in path for c in "*?["):
        found: dict[str, Any] = fs.glob(path, detail=True)
    elif path.endswith(suffix):  # over HTTP, `isdir` would GET the whole file
        found = {path: fs.info(path)}
    elif fs.isdir(path):
        found = {
            p: info
            for p, info in fs.find(path, detail=True).items()
            if p.endswith(suffix) and info.get("type", "file") == "file"
        }
    else:
        found = {path: fs.info(path)}
    files = [
        RemoteFile(_url(scheme, netloc, p, source), int(info["size"]), _version(info))
        for p, info in sorted(found.items())
        if info.get("type", "file") == "file"
    ]
    if not files:
        raise FileNotFoundError(f"No {kind} file found at {source}")
    return files


def _expanded(source: str) -> list[RemoteFile]:
    """The files a brace pattern names, looked at side by side (one round trip each: a
    thousand files one after another would take a thousand round trips)."""
    from braceexpand import braceexpand

    def stat(url: str) -> RemoteFile:
        try:
            return stat_file(url)
        except FileNotFoundError as err:
            raise FileNotFoundError(f"{url} (named by {source}) does not exist") from err

    urls = list(braceexpand(source))
    with ThreadPoolExecutor(max(1, min(_STAT_THREADS, len(urls)))) as pool:
        return list(pool.map(stat, urls))  # in order; the first failure in order is raised


def stat_file(url: str) -> RemoteFile:
    """``url``'s size and version now.

    Raises:
        FileNotFoundError: If it does not exist.
        PermissionError: If the store refuses it (the Hugging Face Hub: in its words).
        TlsCertificateError: If the server's certificate failed verification.
    """
    found = _stat_direct(url)
    if found is not None:
        return found
    fs, path = get_filesystem(url)
    with fsspec_errors(url):
        info = fs.info(path)
    return RemoteFile(url, int(info["size"]), _version(info))


# Files looked at side by side when a pattern names them one by one.
_STAT_THREADS = 16

# A HEAD answers at once or the server is in trouble: not the long timeout of a download.
_HEAD_TIMEOUT = 30.0


def _direct_target(url: str) -> Target | None:
    """Where a ``HEAD`` of ``url`` goes without a file system: a plain http(s) URL, or an
    ``s3://`` or ``azure://`` object on the route the GETs take (``None`` where fsspec must
    answer)."""
    scheme, bucket, path = split_url(url)
    if scheme == "s3":
        return s3_direct.route_for(bucket, path.lstrip("/"))
    if scheme == "azure":
        return azure_direct.route_for(url, bucket, path)
    return plain_target(url)


def _stat_direct(url: str) -> RemoteFile | None:
    """``url``'s size and ``ETag`` from one ``HEAD`` on the downloader's own pooled
    connections: fsspec would import aiohttp (0.15 s of a first sample) or s3fs (0.9 s) for
    it and open sessions of its own. ``None`` where fsspec must answer: no direct route, or
    a server that refuses ``HEAD`` or announces no length."""
    target = _direct_target(url)
    if target is None:
        return None
    try:
        size, etag = HttpSource(target).stat(_HEAD_TIMEOUT)
    except (TruncatedDownloadError, HttpResponseError) as err:
        if isinstance(err, HttpResponseError) and err.status not in (405, 501):
            raise
        return None  # no length, or HEAD not allowed: fsspec asks another way
    # The version is the ETag exactly as sent, as fsspec (and s3fs) report it (or none).
    return RemoteFile(url, size, etag or "")


_CONFIRMED: set[tuple[str, int, str]] = set()  # files whose version this process confirmed


def check_unchanged(file: RemoteFile, shown: str) -> None:
    """Confirms (once per process) that ``file`` still has the size and version its
    metadata was read at.

    Raises:
        StaleIndexError: Naming ``shown``, if the file changed since.
    """
    key = (file.url, file.size, file.version)
    if key in _CONFIRMED:
        return
    confirm_unchanged(file, shown)
    _CONFIRMED.add(key)


def changed_since(file: RemoteFile) -> RemoteFile | None:
    """``file`` as the store has it now, if its size or version differs; else ``None``."""
    now = stat_file(file.url)
    return None if (now.size, now.version) == (file.size, file.version) else now


def confirm_unchanged(file: RemoteFile, shown: str) -> None:
    """Like :func:`check_unchanged`, asking the store every time (after a download, say).

    Raises:
        StaleIndexError: Naming ``shown``, if the file changed since.
    """
    now = changed_since(file)
    if now is not None:
        raise StaleIndexError(
            f"{shown}: the file changed since its metadata was read (size {file.size} -> "
            f"{now.size}, version {file.version!r} -> {now.version!r}); construct the "
            "dataset again to read the new data"
        )


def read_range(url: str, start: int, length: int, size: int, timeout: float, retry: int) -> bytes:
    """Bytes ``[start, start + length)`` of ``url``, which must still be ``size`` bytes.

    Throttled answers (503, 429) are waited out (their ``Retry-After``, the host's pace) and
    asked again without spending an attempt, as a download's are.

    Raises:
        SizeMismatchError: If the object's size changed.
        PermissionError: If the store refuses it (401, 403), at once.
        HttpResponseError: If the store answers another client error (400, 410...), at
            once, naming the URL and the status.
        ThrottledError: If the store throttled ``STREAMX_THROTTLE_RETRIES`` tries.
        OSError: If every attempt failed.
    """
    if length == 0:
        return b""
    last: OSError | None = None
    source = source_for(url)
    for _ in range(max(retry, 1)):
        fd, name = tempfile.mkstemp(prefix="streamx-range-")
        os.unlink(name)
        try:

            def once(into: int = fd) -> None:
                source.fetch_range(into, start, length, size, time.monotonic() + timeout)

            throttle.waiting_out(once, url)
            data = os.pread(fd, length, start)
            if len(data) == length:
                return data
            last = OSError(f"{url}: got {len(data)} of {length} bytes at offset {start}")
        except (
            FileNotFoundError,
            PermissionError,
            SizeMismatchError,
            ObjectChangedError,
            TlsCertificateError,
        ):
            raise  # retrying cannot help: the object is gone, refused or changed, or untrusted
        except HttpResponseError as err:
            if isinstance(err, ThrottledError) or _client_error(err.status):
                raise  # waited out already, or a request the store will refuse again
            last = err
        except OSError as err:
            last = err
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
    assert last is not None
    raise last


def _client_error(status: int) -> bool:
    """Whether an answer's status says the request itself is wrong (400, 410...), so asking
    again gets the same answer; a timeout (408) or an early try (425) may pass later."""
    return 400 <= status < 500 and status not in (408, 425, *THROTTLE_STATUSES)


def read_json_bounded(
    url: str, limit: int, what: str, timeout: float, retry: int
) -> tuple[object, bytes]:
    """The JSON document at ``url`` and its bytes, refused past ``limit`` bytes (an index
    lists files, not samples: a wrong file must not exhaust memory).

    One GET, no ``HEAD`` for the size first: its announced length is checked as the
    ``HEAD``'s was, and sent back to back the pair met a store that allows no burst (nginx
    ``limit_req``) with a refused GET.

    Raises:
        CorruptIndexError: If ``url`` is larger than ``limit`` or not JSON, naming ``what``
            (such as ``"a LitData index"``).
        FileNotFoundError: If it does not exist.
    """
    folder = tempfile.mkdtemp(prefix="streamx-json-")
    path = os.path.join(folder, "document.json")
    try:
        try:
            download_index(url, path, retry=max(retry, 1), timeout=timeout)
        except RemoteTooLargeError as err:
            raise CorruptIndexError(f"{url}: too large for {what} ({err})") from err
        size = os.path.getsize(path)
        if size > limit:
            raise CorruptIndexError(f"{url}: {size} bytes is too large for {what}")
        with open(path, "rb") as file:
            text = file.read()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        return json.loads(text), text
    except (ValueError, RecursionError) as err:
        raise CorruptIndexError(f"{url} is not {what}: {err}") from err
