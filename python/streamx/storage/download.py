"""Download one remote file into the local cache, atomically, with retries and a timeout.

The file first lands in a uniquely named temporary file in the destination directory
(the name carries the pid, so a crashed download's leftovers can be told apart) and is
then renamed into place, so readers never see a partial file. A file fetched in parts
publishes its landed parts in a record (:mod:`~streamx.storage.landed_parts`) until the
rename is done: a reader following it finds the record or the file at every moment.

A file whose size is known (a shard, from ``index.json``) and larger than one part is
fetched as ranged GETs in parallel (:mod:`~streamx.storage.parts`), each written in place
into the preallocated temporary file: object stores cap each GET at tens of MB/s, so
bandwidth comes from parallel GETs; a file fetched ahead of its reader takes fewer, larger
parts (:mod:`~streamx.storage.part_plan`). Other files take one GET. Every GET holds a connection
slot (:mod:`~streamx.storage.slots`); the counts are in :mod:`~streamx.storage.settings`.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import urlparse

from streamx.exceptions import ObjectChangedError, RemoteTooLargeError
from streamx.location import Location
from streamx.storage import s3_direct
from streamx.storage.errors import (
    DownloadTimeoutError,
    RangeIgnoredError,
    TruncatedDownloadError,
)
from streamx.storage.landed_parts import LandedRecord
from streamx.storage.object_pin import ObjectPin
from streamx.storage.object_sources import Source, note_ranges_ignored, ranges_ignored, source_for
from streamx.storage.part_plan import is_look_ahead, plan_parts
from streamx.storage.parts import backoff_delay, fetch_parts
from streamx.storage.retry_budget import PERMANENT, RetryBudget
from streamx.storage.settings import download_connections, max_index_bytes
from streamx.storage.slots import ConnectionSlots, LocalSlots, Slots, current_slots
from streamx.storage.throttle import AdaptiveLimit, limit_for

__all__ = [
    "DownloadTimeoutError",
    "Progress",
    "TruncatedDownloadError",
    "backoff_delay",
    "download_file",
    "download_index",
    "fetching_files",
    "host_limit",
    "one_get",
    "process_slots",
    "temp_path_for",
]

logger = logging.getLogger(__name__)

# progress(temp_path, bytes complete from the start): see download_file.
Progress = Callable[[str, int], None]

_LOCAL_SLOTS: dict[int, LocalSlots] = {}

# Set around the download of a small file whose size nothing gives (a stream's index).
_ONE_GET: contextvars.ContextVar[bool] = contextvars.ContextVar("streamx_one_get", default=False)


@contextlib.contextmanager
def one_get() -> Iterator[None]:
    """Files of unknown size downloaded in this context take one GET, with no ``HEAD``
    first. The GET's announced length is checked and bounded as the ``HEAD``'s would be;
    the ``HEAD`` only lets a large file come in parallel parts, and sent back to back with
    the GET it is refused by a store that allows no burst (nginx ``limit_req``)."""
    token = _ONE_GET.set(True)
    try:
        yield
    finally:
        _ONE_GET.reset(token)


def download_index(
    remote_url: str, local_path: str, *, retry: int = 2, timeout: float = 60.0
) -> None:
    """Downloads a dataset's index file (its size is unknown) in one GET, as
    :func:`one_get` explains, atomically and with :func:`download_file`'s retries."""
    with one_get():
        download_file(remote_url, local_path, retry=retry, timeout=timeout)


def temp_path_for(local_path: str) -> str:
    """A unique temporary name next to `local_path`, tagged with this process's pid."""
    head, tail = os.path.split(local_path)
    return os.path.join(head, f".{tail}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _own(tmp: str) -> int:
    """Creates ``tmp`` and holds a shared ``flock`` on it while it downloads: the kernel drops
    the lock when the process dies, so ``streamx cache clean`` tells a live download from a
    dead one by whether it can take the lock, which a pid cannot tell across containers.
    Every writer of ``tmp`` opens it in place, so the lock stays on the file."""
    fd = os.open(tmp, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    with contextlib.suppress(OSError):  # no locks here: clean then keeps the file
        fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def download_file(
    remote_url: str,
    local_path: str,
    *,
    retry: int = 2,
    timeout: float = 60.0,
    expected_size: int | None = None,
    slots: Slots | None = None,
    progress: Progress | None = None,
) -> None:
    """Download `remote_url` to `local_path` atomically.

    Args:
        remote_url: Any URL :func:`~streamx.storage.filesystems.get_filesystem` accepts.
        local_path: Destination file; its directory is created if needed.
        retry: Attempts of the file (at least 1), with full-jitter exponential backoff
            between them. A file fetched in parts asks again only for its failed parts, and
            parts that fail together count as one attempt
            (:mod:`~streamx.storage.retry_budget`). Throttled answers (503, 429) are waited
            out and do not count (:mod:`~streamx.storage.throttle`).
        timeout: Seconds each GET may take before it is abandoned and retried; a body that
            stalls mid-way fails within it. The whole file, all its parts and retries,
            takes at most ``retry x timeout`` seconds from its first request.
        expected_size: Size the file must have (e.g. from ``index.json``); it lets a large
            file be fetched in parallel parts (each pinned to the version the first part
            answered with). When omitted, the object is fetched in one GET and its announced
            size is checked; it may then be at most ``STREAMX_MAX_INDEX_BYTES`` (see
            :func:`~streamx.storage.settings.max_index_bytes`). A short body is retried,
            and no more than the size is ever written.
        slots: The connection slots to hold while a GET runs; the shard cache passes the
            node-wide ones of its cache directory (through
            :func:`~streamx.storage.slots.using_slots`). By default, this process's own
            ``STREAMX_DOWNLOAD_CONNECTIONS``.
        progress: Called as ``progress(temp_path, n)`` whenever the first ``n`` bytes of
            a file fetched in parts are final (the parts done without a gap), from the
            threads that fetched them; lets a consumer (a decompressor) follow the
            download. ``temp_path`` is the file being written, renamed once complete.

    Raises:
        ValueError: if `retry` < 1 or `timeout` <= 0.
        FileNotFoundError: ``Object <url> not found.`` when the remote object does not
            exist (not retried).
        PermissionError: when access is refused (not retried); for S3 without credentials
            it says where streamx looked for them.
        DownloadTimeoutError: if the last attempt timed out.
        RemoteTooLargeError: if no size was expected and the object is over the bound.
        ObjectChangedError: if the object changed while its parts downloaded, on every
            attempt.
        OSError: the last attempt's error otherwise; each names the URL.

    Examples:
        >>> download_file("s3://bucket/ds/shard.00000.mds", "/tmp/cache/shard.00000.mds",
        ...               expected_size=67108864)  # doctest: +SKIP
    """
    if retry < 1:
        raise ValueError(f"num_attempts must be at-least 1, got retry={retry}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    source = source_for(remote_url)
    os.makedirs(os.path.dirname(local_path) or ".", exist_ok=True)
    slots = slots or current_slots() or process_slots()
    tmp = temp_path_for(local_path)
    owner = _own(tmp)
    landed: LandedRecord | None = None
    try:
        landed = _fetch(source, tmp, expected_size, retry, timeout, slots, progress)
        os.replace(tmp, local_path)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"Object {remote_url} not found.") from err
    except PermissionError as err:
        raise PermissionError(_denied_message(remote_url, err)) from err
    finally:
        if landed is not None:
            # After the rename (a kill between the two leaves a record beside the complete
            # file: readers take the file, and the next run removes the record).
            landed.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        os.close(owner)


def process_slots() -> LocalSlots:
    """This process's own connection slots (where no node-wide slots are set up), made
    again when ``STREAMX_DOWNLOAD_CONNECTIONS`` changes (a later dataset of the process
    gets the count its environment now asks for, not the first one's)."""
    pid, count = os.getpid(), download_connections()
    slots = _LOCAL_SLOTS.get(pid)
    if slots is None or slots.count != count:
        _LOCAL_SLOTS.clear()
        slots = _LOCAL_SLOTS[pid] = LocalSlots(count)
    return slots


def _fetch(
    source: Source,
    tmp: str,
    size: int | None,
    retry: int,
    timeout: float,
    slots: Slots,
    progress: Progress | None,
) -> LandedRecord | None:
    """Fetches the file into ``tmp``; the record of its landed parts when it came in parts
    (still published: the caller removes it once the file is in place)."""
    most = None
    if size is None:
        most = max_index_bytes()
        # No connection slot held: a HEAD moves no body, and a throttled one waits out its
        # Retry-After (its start keeps the host's pace), which would keep the slot from the
        # GETs of other files all that while.
        size = None if _ONE_GET.get() else source.size(timeout)
        if size is not None and size > most:
            raise RemoteTooLargeError(
                f"{source.url} is {size} bytes (as its HEAD says), over the bound of {most} "
                "bytes for a file whose size no index gives (STREAMX_MAX_INDEX_BYTES)"
            )
    if size is not None and not ranges_ignored(source.url):
        with fetching_files() as files:
            # The connections are shared by the files fetched at once: one alone spreads
            # over all of them, several take fewer, larger parts; a file fetched ahead of
            # its reader takes few, large parts (part_plan).
            throttled = _throttled_part(source, slots, size, files)
            parts = plan_parts(size, slots.count, files, throttled)
            if len(parts) > 1:
                record = _fetched_in_parts(
                    source, tmp, size, parts, retry, timeout, slots, progress
                )
                if record is not None:
                    return record
    budget = RetryBudget(source.url, retry, timeout, urgent=not is_look_ahead())
    limit = host_limit(source, slots)

    def whole(deadline: float) -> None:
        began = time.monotonic()
        source.fetch_whole(tmp, size, deadline - began, most)
        if size is not None:
            limit.observed(size, time.monotonic() - began)

    budget.run(
        whole, f"GET {source.url}", slots, limit, permanent=(*PERMANENT, RemoteTooLargeError)
    )
    return None


# Files this process fetches now: [needed now, fetched ahead].
_FETCHING = [0, 0]
_FETCHING_LOCK = threading.Lock()


@contextlib.contextmanager
def fetching_files() -> Iterator[int]:
    """Counts this file among those this process fetches; yields how many share the
    connections with it. A file needed now shares them only with the other files needed
    now: the files fetched ahead take few parts (:mod:`~streamx.storage.part_plan`)."""
    kind = 1 if is_look_ahead() else 0
    with _FETCHING_LOCK:
        _FETCHING[kind] += 1
        files = _FETCHING[0] + (_FETCHING[1] if kind else 0)
    try:
        yield files
    finally:
        with _FETCHING_LOCK:
            _FETCHING[kind] -= 1


def _throttled_part(source: Source, slots: Slots, size: int, files: int) -> int:
    """The smallest part for a file of a throttling host: stores throttle the rate of
    requests, not bytes, so a throttled host gets fewer, larger parts
    (:meth:`~streamx.storage.throttle.AdaptiveLimit.requests_for_files`). 0 while calm."""
    most = host_limit(source, slots).requests_for_files(size, files)
    return 0 if most is None else -(-size // most)


def host_limit(source: Source, slots: Slots) -> AdaptiveLimit:
    """The throttling limit of ``source``'s host; the node's slots follow it."""
    publish = slots.publish_limit if isinstance(slots, ConnectionSlots) else None
    return limit_for(urlparse(source.url).netloc, slots.count, publish)


def _fetched_in_parts(
    source: Source,
    tmp: str,
    size: int,
    parts: list[tuple[int, int]],
    retry: int,
    timeout: float,
    slots: Slots,
    progress: Progress | None,
) -> LandedRecord | None:
    """Fetches the file in parts; its record of landed parts (still published), or None
    when the server turned out to ignore ranges (the caller then takes one GET). An object
    rewritten meanwhile is fetched again, all parts, unless a consumer follows the download
    (it may have read the first version's bytes)."""
    for attempt in range(1, retry + 1):
        try:
            return _fetch_in_parts(source, tmp, size, parts, retry, timeout, slots, progress)
        except RangeIgnoredError:
            logger.info("%s: the server ignores ranges; fetching it in one GET", source.url)
            note_ranges_ignored(source.url)
            return None
        except ObjectChangedError as err:
            if attempt == retry or progress is not None:
                raise
            logger.info("%s; fetching every part again (attempt %d/%d)", err, attempt, retry)
    return None


def _fetch_in_parts(
    source: Source,
    tmp: str,
    size: int,
    parts: list[tuple[int, int]],
    retry: int,
    timeout: float,
    slots: Slots,
    progress: Progress | None,
) -> LandedRecord:
    """Fetches every part into ``tmp``; returns the record of its landed parts, complete
    and still published (removed here if the attempt fails, before anything writes the
    file again)."""
    # Published before the file is truncated.
    record = LandedRecord(tmp, size, {start: start + length for start, length in parts})
    prefix = _Prefix(tmp, parts, progress) if progress is not None else None
    pin = ObjectPin(source.url)

    def done(start: int) -> None:
        record.done(start, pin.version)  # readers copy the part only under the same pin
        if prefix is not None:
            prefix.done(start)

    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except BaseException:
        record.close()
        raise
    try:
        _preallocate(fd, size)

        def fetch(into: int, start: int, length: int, deadline: float) -> None:
            source.fetch_range(into, start, length, size, deadline, pin)

        fetch_parts(
            fetch,
            fd,
            parts,
            tmp=tmp,
            budget=RetryBudget(source.url, retry, timeout, urgent=not is_look_ahead()),
            slots=slots,
            limit=host_limit(source, slots),
            done=done,
            permanent=(*PERMANENT, RangeIgnoredError, ObjectChangedError),
        )
    except BaseException:
        record.close()
        raise
    finally:
        os.close(fd)
    return record


class _Prefix:
    """Reports how far from its start a file fetched in parts is complete."""

    def __init__(self, path: str, parts: list[tuple[int, int]], report: Progress) -> None:
        self._path, self._report = path, report
        self._end_of = {start: start + length for start, length in parts}
        self._done: set[int] = set()
        self._complete = 0
        self._lock = threading.Lock()

    def done(self, start: int) -> None:
        with self._lock:  # reports stay in order
            self._done.add(start)
            before = self._complete
            while self._complete in self._done:
                self._complete = self._end_of[self._complete]
            if self._complete != before:
                self._report(self._path, self._complete)


def _preallocate(fd: int, size: int) -> None:
    """Reserves the file's blocks (a full disk fails here, not mid-download)."""
    try:
        os.posix_fallocate(fd, 0, size)
    except (AttributeError, OSError):
        os.ftruncate(fd, size)  # filesystems without fallocate: a sparse file


def _denied_message(url: str, err: PermissionError) -> str:
    if Location.parse(url).scheme != "s3":
        return f"Access to {url} was denied: {err}"
    if not s3_direct.has_credentials():
        return (
            f"Object {url} not found! Access was denied (HTTP 403 Forbidden) and no AWS "
            f"credentials were found, so the request went unsigned. streamx looked in "
            f"{s3_direct.CREDENTIAL_PLACES}. Set credentials there, or check the bucket path "
            f"and permission."
        )
    return (
        f"Object {url} not found! Either check the bucket path or the bucket permission "
        f"({err}). If the bucket is a requester pays bucket, then provide the bucket name to "
        f"the environment variable `MOSAICML_STREAMING_AWS_REQUESTER_PAYS`."
    )
