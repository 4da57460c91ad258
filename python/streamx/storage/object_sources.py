"""Where a download's bytes come from: direct HTTP (signed for S3, a bearer token for GCS,
a SAS or a bearer token for Azure, plain for http(s)://) or an fsspec filesystem. Each
source fetches a whole object into a path or one byte range into an open file at its
offset."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol
from urllib.parse import urlparse

from streamx.exceptions import RemoteTooLargeError, SizeMismatchError
from streamx.storage import azure_direct, gcs_direct, s3_direct
from streamx.storage.errors import DownloadTimeoutError, TruncatedDownloadError
from streamx.storage.filesystems import fsspec_errors, get_filesystem, split_url
from streamx.storage.http_source import HttpSource, plain_target
from streamx.storage.object_pin import ObjectPin

if TYPE_CHECKING:  # fsspec is imported when a filesystem is built, not with streamx
    from fsspec import AbstractFileSystem

__all__ = [
    "FsspecSource",
    "HttpSource",
    "Source",
    "forget_rangeless_hosts",
    "note_ranges_ignored",
    "ranges_ignored",
    "source_for",
]

_CHUNK = 8 << 20
# Reads from an async HTTP body: what the socket buffer holds is returned at once, so a small
# size does not mean more copies; larger ones measured slower against a loopback server.
_ASYNC_CHUNK = 1 << 16


class Source(Protocol):
    @property
    def url(self) -> str: ...

    def fetch_whole(
        self, tmp: str, expected: int | None, timeout: float, most: int | None = None
    ) -> None:
        """Writes the whole object to ``tmp``, checking its size against ``expected``; with
        no ``expected``, an object over ``most`` bytes is refused before its body is read
        past the bound (``RemoteTooLargeError`` or ``TruncatedDownloadError``)."""
        ...

    def fetch_range(
        self,
        fd: int,
        start: int,
        length: int,
        size: int,
        deadline: float,
        pin: ObjectPin | None = None,
    ) -> None:
        """Writes bytes ``[start, start + length)`` at the same offset of ``fd``, checking
        the object is ``size`` bytes where the answer says (else ``SizeMismatchError``) and
        of the version ``pin`` holds (else ``ObjectChangedError``)."""
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
    elif scheme in ("gs", "gcs"):
        gcs = gcs_direct.route_for(url, bucket, path.lstrip("/"))
        if gcs is not None:
            return HttpSource(gcs)
    elif scheme == "azure":
        blob = azure_direct.route_for(url, bucket, path)
        if blob is not None:
            return HttpSource(blob)
    elif scheme in ("http", "https"):
        target = plain_target(url)
        if target is not None:
            return HttpSource(target)
    return FsspecSource(*get_filesystem(url), url)


# Hosts seen answering a ranged GET with the whole object: their objects take one GET.
_RANGELESS: set[tuple[str, str]] = set()


def _host(url: str) -> tuple[str, str]:
    parsed = urlparse(url)
    return parsed.scheme, parsed.netloc


def ranges_ignored(url: str) -> bool:
    """Whether ``url``'s host was seen ignoring ``Range`` (by this process)."""
    return _host(url) in _RANGELESS


def note_ranges_ignored(url: str) -> None:
    """Remembers that ``url``'s host ignores ``Range``."""
    _RANGELESS.add(_host(url))


def forget_rangeless_hosts() -> None:
    """Forgets which hosts were seen ignoring ``Range`` (another server may now listen at
    one of their ports: a test's, say)."""
    _RANGELESS.clear()


class FsspecSource:
    def __init__(self, fs: AbstractFileSystem, path: str, url: str) -> None:
        self.fs, self.path, self.url = fs, path, url

    def fetch_whole(
        self, tmp: str, expected: int | None, timeout: float, most: int | None = None
    ) -> None:
        with fsspec_errors(self.url):
            self._fetch_whole(tmp, expected, timeout, most)

    def _fetch_whole(
        self, tmp: str, expected: int | None, timeout: float, most: int | None
    ) -> None:
        fs, path = self.fs, self.path
        if _is_s3(fs):
            _run_async(fs, _whole_s3(fs, path, tmp, (expected, most), self.url), timeout)
            return
        if getattr(fs, "async_impl", False) and hasattr(fs, "_get_file"):
            _run_async(fs, _whole_async(fs, path, tmp, (expected, most), self.url), timeout)
            return
        deadline = time.monotonic() + timeout
        if expected is None:
            expected = int(fs.info(path)["size"])
            _check_bound(expected, most, self.url)
        _whole_sync(fs, path, tmp, expected, deadline, self.url)

    def size(self, timeout: float) -> int | None:
        return None

    def fetch_range(
        self,
        fd: int,
        start: int,
        length: int,
        size: int,
        deadline: float,
        pin: ObjectPin | None = None,
    ) -> None:
        fs, path = self.fs, self.path
        timeout = max(deadline - time.monotonic(), 0.001)
        with fsspec_errors(self.url, pin):
            if _is_s3(fs):
                fetch = _range_s3(fs, path, fd, (start, length, size), pin, self.url)
                got = _run_async(fs, fetch, timeout)
            elif getattr(fs, "async_impl", False):
                data = _run_async(fs, fs._cat_file(path, start=start, end=start + length), timeout)
                got = _write_at(fd, data, start)
            else:
                got = _write_at(fd, _read_exact(fs, path, start, length), start)
        if got != length:
            raise TruncatedDownloadError(
                f"{self.url}: received {got} of {length} bytes at offset {start}"
            )


def _read_exact(fs: Any, path: str, start: int, length: int) -> bytes:
    """Bytes ``[start, start + length)`` and no more: ``cat_file`` of a buffered remote
    file (the Hugging Face Hub's, OCI's) reads through its default cache, which fetches a
    whole block (5 MB for the Hub) for a range of a few KB."""
    from fsspec.implementations.local import LocalFileSystem

    if isinstance(fs, LocalFileSystem):
        data: bytes = fs.cat_file(path, start=start, end=start + length)
        return data
    with fs.open(path, "rb", cache_type="none") as file:
        file.seek(start)
        read: bytes = file.read(length)
    return read


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


async def _whole_s3(
    fs: Any, path: str, tmp: str, sizes: tuple[int | None, int | None], url: str
) -> None:
    """One GET streamed to disk. s3fs's ``_get_file`` costs a second request and about 2.5x
    the CPU per byte (measured against a loopback server). ``sizes``: (the size expected,
    the most bytes accepted when none is)."""
    size, most = sizes
    response = await _get_object(fs, path)
    announced = response.get("ContentLength")
    if size is not None and announced is not None and int(announced) != size:
        response["Body"].close()
        raise SizeMismatchError(
            f"{url}: expected {size} bytes, S3 announced {announced}", int(announced)
        )
    body = response["Body"]
    if size is None and announced is not None:
        try:
            _check_bound(int(announced), most, url)
        except RemoteTooLargeError:
            body.close()
            raise
    limit = size if size is not None else announced if announced is not None else most
    written = 0
    try:
        with open(tmp, "wb") as out:
            while chunk := await body.read(_ASYNC_CHUNK):
                written = _append_bounded(out, chunk, written, limit, url)
    finally:
        body.close()
    _check_size(tmp, limit, url)


def _append_bounded(out: BinaryIO, chunk: bytes, written: int, limit: int | None, url: str) -> int:
    """Appends ``chunk`` unless it would take the file past ``limit`` bytes: a body that
    runs on past the size it should have fails here, and nothing past the size is written."""
    if limit is not None and written + len(chunk) > int(limit):
        raise TruncatedDownloadError(
            f"{url}: the server sent more than the {int(limit)} bytes expected"
        )
    out.write(chunk)
    return written + len(chunk)


async def _range_s3(
    fs: Any, path: str, fd: int, span: tuple[int, int, int], pin: ObjectPin | None, url: str
) -> int:
    """One ranged GET; ``span`` is (start, length, the object's size)."""
    start, length, size = span
    extra = {"Range": f"bytes={start}-{start + length - 1}"}
    condition = pin.headers() if pin is not None else {}
    if "if-match" in condition:
        extra["IfMatch"] = condition["if-match"]
    # A 412 to the If-Match is pin.refused() by the caller's fsspec_errors.
    response = await _get_object(fs, path, **extra)
    body = response["Body"]
    total = str(response.get("ContentRange", "")).rpartition("/")[2]
    if total.isdigit() and int(total) != size:
        body.close()
        raise SizeMismatchError(f"{url} is {total} bytes, {size} expected", int(total))
    if pin is not None:
        modified = response.get("LastModified")
        try:
            pin.check(response.get("ETag"), None if modified is None else str(modified))
        except OSError:
            body.close()
            raise
    done = 0
    try:
        while done < length and (chunk := await body.read(min(_ASYNC_CHUNK, length - done))):
            done += _write_at(fd, chunk, start + done)
    finally:
        body.close()
    return done


async def _whole_async(
    fs: Any, path: str, tmp: str, sizes: tuple[int | None, int | None], url: str
) -> None:
    size, most = sizes
    if size is None:
        size = int((await fs._info(path))["size"])
        _check_bound(size, most, url)
    try:
        stream = await fs.open_async(path, "rb", size=size)  # size given: no HEAD
    except NotImplementedError:
        stream = None
    if stream is None:  # no streaming reader: fsspec's own copy, checked once complete
        await fs._get_file(path, tmp)
        _check_size(tmp, size, url)
        return
    written = 0
    try:
        with open(tmp, "wb") as out:
            while chunk := await stream.read(_ASYNC_CHUNK):
                written = _append_bounded(out, chunk, written, size, url)
    finally:
        await stream.close()
    _check_size(tmp, size, url)


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
    fs: AbstractFileSystem, path: str, tmp: str, size: int, deadline: float, url: str
) -> None:
    """Chunked copy for synchronous filesystems, checking the deadline between chunks."""
    written = 0
    with fs.open(path, "rb") as src, open(tmp, "wb") as dst:
        while chunk := src.read(min(_CHUNK, size + 1 - written)):
            written = _append_bounded(dst, chunk, written, size, url)
            if time.monotonic() > deadline:
                raise DownloadTimeoutError(f"download of {url} ran past its deadline")
    _check_size(tmp, size, url)


def _check_bound(size: int, most: int | None, url: str) -> None:
    if most is not None and size > most:
        raise RemoteTooLargeError(
            f"{url} is {size} bytes, over the bound of {most} bytes for a file whose size "
            "no index gives (STREAMX_MAX_INDEX_BYTES)"
        )


def _check_size(tmp: str, size: int | None, path: str) -> None:
    if size is None:
        return
    got = os.path.getsize(tmp)
    if got != size:
        raise TruncatedDownloadError(f"{path}: received {got} of {size} bytes")
