"""Where a download's bytes come from: direct HTTP (signed for S3, plain for http(s)://)
or an fsspec filesystem. Each source fetches a whole object into a path or one byte range
into an open file at its offset."""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import os
import time
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlparse

from streamx.exceptions import SizeMismatchError
from streamx.storage import s3_direct
from streamx.storage.errors import DownloadTimeoutError, TruncatedDownloadError
from streamx.storage.filesystems import get_filesystem, split_url
from streamx.storage.http_get import PlainHttp, Target, get_into, head_size

if TYPE_CHECKING:  # fsspec is imported when a filesystem is built, not with streamx
    from fsspec import AbstractFileSystem

__all__ = ["FsspecSource", "HttpSource", "Source", "source_for"]

_CHUNK = 8 << 20
# Reads from an async HTTP body: what the socket buffer holds is returned at once, so a small
# size does not mean more copies; larger ones measured slower against a loopback server.
_ASYNC_CHUNK = 1 << 16


class Source(Protocol):
    @property
    def url(self) -> str: ...

    def fetch_whole(self, tmp: str, expected: int | None, timeout: float) -> None:
        """Writes the whole object to ``tmp``, checking its size against ``expected``."""
        ...

    def fetch_range(self, fd: int, start: int, length: int, size: int, deadline: float) -> None:
        """Writes bytes ``[start, start + length)`` at the same offset of ``fd``, checking
        the object is ``size`` bytes where the answer says (else ``SizeMismatchError``)."""
        ...

    def size(self, timeout: float) -> int | None:
        """The object's size when it costs one cheap request and a whole GET could not
        check its own body otherwise; None to fetch it in one GET."""
        ...


def source_for(url: str) -> Source:
    """The direct route where there is one, fsspec otherwise."""
    scheme, bucket, path = split_url(url)
    if scheme == "s3":
        route = s3_direct.route_for(bucket, path.lstrip("/"))
        if route is not None:
            return HttpSource(route)
    elif scheme in ("http", "https"):
        parsed = urlparse(url)
        if parsed.hostname and not parsed.username and not parsed.query:
            target_path = parsed.path or "/"
            return HttpSource(PlainHttp(url, scheme, parsed.hostname, parsed.port, target_path))
    return FsspecSource(*get_filesystem(url), url)


class HttpSource:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.url = target.url

    def fetch_whole(self, tmp: str, expected: int | None, timeout: float) -> None:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            deadline = time.monotonic() + timeout
            get_into(
                self.target, fd, 0, None, timeout=timeout, deadline=deadline, expected=expected
            )
        except http.client.IncompleteRead as err:
            raise TruncatedDownloadError(
                f"{self.url}: connection closed mid-body ({err!r})"
            ) from err
        except TimeoutError as err:
            raise DownloadTimeoutError(
                f"download attempt of {self.url} took over {timeout}s"
            ) from err
        finally:
            os.close(fd)

    def size(self, timeout: float) -> int | None:
        # S3 checks a whole GET against its stored checksum; plain HTTP has only the size.
        return head_size(self.target, timeout) if isinstance(self.target, PlainHttp) else None

    def fetch_range(self, fd: int, start: int, length: int, size: int, deadline: float) -> None:
        timeout = max(deadline - time.monotonic(), 0.001)
        try:
            get_into(
                self.target, fd, start, length, timeout=timeout, deadline=deadline, expected=size
            )
        except http.client.IncompleteRead as err:
            raise TruncatedDownloadError(
                f"{self.url}: connection closed mid-body ({err!r})"
            ) from err
        except TimeoutError as err:
            raise DownloadTimeoutError(f"GET {self.url} (a range) ran past its timeout") from err


class FsspecSource:
    def __init__(self, fs: AbstractFileSystem, path: str, url: str) -> None:
        self.fs, self.path, self.url = fs, path, url

    def fetch_whole(self, tmp: str, expected: int | None, timeout: float) -> None:
        fs, path = self.fs, self.path
        if _is_s3(fs):
            _run_async(fs, _whole_s3(fs, path, tmp, expected), timeout)
        elif getattr(fs, "async_impl", False) and hasattr(fs, "_get_file"):
            _run_async(fs, _whole_async(fs, path, tmp, expected), timeout)
        else:
            _whole_sync(fs, path, tmp, expected, time.monotonic() + timeout)

    def size(self, timeout: float) -> int | None:
        return None

    def fetch_range(self, fd: int, start: int, length: int, size: int, deadline: float) -> None:
        fs, path = self.fs, self.path
        timeout = max(deadline - time.monotonic(), 0.001)
        if _is_s3(fs):
            got = _run_async(fs, _range_s3(fs, path, fd, start, length, size), timeout)
        elif getattr(fs, "async_impl", False):
            data = _run_async(fs, fs._cat_file(path, start=start, end=start + length), timeout)
            got = _write_at(fd, data, start)
        else:
            got = _write_at(fd, fs.cat_file(path, start=start, end=start + length), start)
        if got != length:
            raise TruncatedDownloadError(
                f"{self.url}: received {got} of {length} bytes at offset {start}"
            )


def _write_at(fd: int, data: bytes, offset: int) -> int:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written
    return len(data)


def _is_s3(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    return "s3" in protocol and hasattr(fs, "_call_s3")


async def _get_object(fs: Any, path: str, **extra: str) -> Any:
    bucket, key, version = fs.split_path(path)
    kwargs = dict(fs.req_kw)  # e.g. RequestPayer
    if version:
        kwargs["VersionId"] = version
    # Errors are translated by ``_call_s3``: a missing key is ``FileNotFoundError``.
    return await fs._call_s3("get_object", Bucket=bucket, Key=key, **kwargs, **extra)


async def _whole_s3(fs: Any, path: str, tmp: str, size: int | None) -> None:
    """One GET streamed to disk. s3fs's ``_get_file`` costs a second request and about 2.5x
    the CPU per byte (measured against a loopback server)."""
    response = await _get_object(fs, path)
    announced = response.get("ContentLength")
    if size is not None and announced is not None and int(announced) != size:
        response["Body"].close()
        raise SizeMismatchError(
            f"{path}: expected {size} bytes, S3 announced {announced}", int(announced)
        )
    body = response["Body"]
    limit = size if size is not None else announced
    written = 0
    try:
        with open(tmp, "wb") as out:
            while chunk := await body.read(_ASYNC_CHUNK):
                out.write(chunk)
                written += len(chunk)
                if limit is not None and written > int(limit):
                    break  # a server sending past the size: stop here, not at the disk's end
    finally:
        body.close()
    _check_size(tmp, limit, path)


async def _range_s3(fs: Any, path: str, fd: int, start: int, length: int, size: int) -> int:
    response = await _get_object(fs, path, Range=f"bytes={start}-{start + length - 1}")
    body = response["Body"]
    total = str(response.get("ContentRange", "")).rpartition("/")[2]
    if total.isdigit() and int(total) != size:
        body.close()
        raise SizeMismatchError(f"{path} is {total} bytes, {size} expected", int(total))
    done = 0
    try:
        while done < length and (chunk := await body.read(min(_ASYNC_CHUNK, length - done))):
            done += _write_at(fd, chunk, start + done)
    finally:
        body.close()
    return done


async def _whole_async(fs: Any, path: str, tmp: str, size: int | None) -> None:
    if size is None:
        size = int((await fs._info(path))["size"])
    await fs._get_file(path, tmp)
    _check_size(tmp, size, path)


def _run_async(fs: Any, coro: Any, timeout: float) -> Any:
    """Run `coro` on the filesystem's event loop; cancel it for real at the timeout."""

    async def bounded() -> Any:
        try:
            return await asyncio.wait_for(coro, timeout)
        except asyncio.TimeoutError as err:
            raise DownloadTimeoutError(f"download attempt took over {timeout}s") from err

    future = asyncio.run_coroutine_threadsafe(bounded(), fs.loop)
    # The loop enforces the timeout; the extra margin only guards against a wedged loop.
    try:
        return future.result(timeout + 30)
    except concurrent.futures.TimeoutError as err:
        future.cancel()
        raise DownloadTimeoutError(f"event loop did not finish within {timeout}s") from err


def _whole_sync(
    fs: AbstractFileSystem, path: str, tmp: str, size: int | None, deadline: float
) -> None:
    """Chunked copy for synchronous filesystems, checking the deadline between chunks."""
    if size is None:
        size = int(fs.info(path)["size"])
    written = 0
    with fs.open(path, "rb") as src, open(tmp, "wb") as dst:
        while chunk := src.read(_CHUNK):
            dst.write(chunk)
            written += len(chunk)
            if written > size:
                break  # more than the object's size: _check_size names it
            if time.monotonic() > deadline:
                raise DownloadTimeoutError(f"download of {path} ran past its deadline")
    _check_size(tmp, size, path)


def _check_size(tmp: str, size: int | None, path: str) -> None:
    if size is None:
        return
    got = os.path.getsize(tmp)
    if got != size:
        raise TruncatedDownloadError(f"{path}: received {got} of {size} bytes")
