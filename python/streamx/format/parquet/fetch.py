"""A row group's projected column chunks fetched into its local file, as the MDS download
fetches a shard: ranged GETs of the store's part size in parallel, over the connections the
settings allow, with its retries, timeouts, throttling and version pin.

The local file is the chunks one after the other (what :class:`RemappedFile` maps back),
while every ranged GET writes its bytes at the object's own offsets. So the parts land in
an unnamed file of the object's layout beside the local file (sparse: only the fetched
ranges take blocks, and a crash leaves nothing behind), and each part, once complete, is
moved to its place in the local file by ``copy_file_range``: in the kernel, and while the
other parts still download. The local file is renamed into place once every part is in.

A row group's bytes are one version of the object: the parts are pinned to the ``ETag``
the footer was read at when the listing gave one (else to the first part's answer), so a
file rewritten on the server, before the fetch or mid-way, fails with
:class:`~streamx.exceptions.StaleIndexError` and never mixes two versions. A refusal while
the listing still gives the footer's ``ETag`` means the GETs answer with another one (a
CDN's): the parts are then fetched again, pinned to their first answer.
"""

from __future__ import annotations

import bisect
import os
import tempfile
from dataclasses import dataclass

from streamx.exceptions import (
    ObjectChangedError,
    RangeIgnoredError,
    SizeMismatchError,
    StaleIndexError,
)
from streamx.format.parquet.chunks import ranged_parts
from streamx.format.remote_files import RemoteFile, changed_since, confirm_unchanged
from streamx.runtime.atomic_write import atomic_file
from streamx.storage.download import fetching_files, host_limit, process_slots, temp_path_for
from streamx.storage.file_copy import copy_between
from streamx.storage.object_pin import ObjectPin
from streamx.storage.object_sources import Source, source_for
from streamx.storage.parts import fetch_parts
from streamx.storage.retry_budget import PERMANENT, RetryBudget
from streamx.storage.settings import part_size
from streamx.storage.slots import Slots, current_slots

__all__ = ["Fetch", "fetch_chunks"]

_STALE = (ObjectChangedError, SizeMismatchError)


@dataclass(frozen=True)
class Fetch:
    """What to fetch: ``chunks`` (``(offset, length)``, sorted, apart) of ``file`` into
    ``path``; ``where`` names the row group in errors."""

    file: RemoteFile
    chunks: list[tuple[int, int]]
    path: str
    where: str


def fetch_chunks(job: Fetch, timeout: float, retry: int) -> int:
    """Writes the chunks one after the other to ``job.path`` (atomically); returns the
    bytes written.

    Raises:
        StaleIndexError: Naming the file and row group, if the object is not the version
            (or size) its footer was read at.
        RangeIgnoredError: If the server answers ranged GETs with the whole object.
        DownloadTimeoutError: If a GET ran past ``timeout`` on every attempt.
        OSError: The last attempt's error otherwise, naming the URL.
    """
    total = sum(length for _, length in job.chunks)
    os.makedirs(os.path.dirname(job.path) or ".", exist_ok=True)
    local = _local_path(job.file.url)
    with atomic_file(job.path) as out:
        # A local copy is one synchronous copy that fails whole on a full disk: reserving
        # its blocks first would only make the kernel convert them as it writes (a 470 KB
        # row group copied in 0.8 ms instead of 0.4 on ext4).
        if total and local is None:
            _reserve(out.fileno(), total)
        if local is not None:
            copied = _copy_local(local, out.fileno(), job.chunks)
            # No version pins a plain copy: the file is looked at after it, every time (an
            # evicted row group comes back from the file as it is now, or not at all).
            if not _same_file(copied, job.file):
                confirm_unchanged(job.file, job.where)
        elif total:
            _fetch_remote(job, out.fileno(), timeout, retry)
    return total


def _local_path(url: str) -> str | None:
    """The path of a local file (no network: a plain copy), else None."""
    if url.startswith("file://"):
        return url[len("file://") :]
    return None if "://" in url else url


def _copy_local(source: str, out: int, chunks: list[tuple[int, int]]) -> os.stat_result:
    """Copies ``chunks`` of ``source`` to ``out``; returns the source's status after."""
    fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        at = 0
        for start, length in chunks:
            copy_between(fd, out, length, start, at, source)
            at += length
        return os.fstat(fd)
    finally:
        os.close(fd)


def _same_file(status: os.stat_result, file: RemoteFile) -> bool:
    """Whether the copied file still has the size and version (a local file's: its mtime,
    as fsspec reports it) its footer was read at. ``False`` sends the question to the file
    system's own answer (:func:`confirm_unchanged`), which raises if it changed: this only
    spares a local file's second look through fsspec (a tenth of a millisecond)."""
    return status.st_size == file.size and str(status.st_mtime) == file.version


def _fetch_remote(job: Fetch, out: int, timeout: float, retry: int) -> None:
    source = source_for(job.file.url)
    slots = current_slots() or process_slots()
    with fetching_files() as files:
        # As a shard: a row group alone spreads over every connection, several share them.
        size = part_size(sum(n for _, n in job.chunks), max(slots.count // files, 1))
        parts = ranged_parts(job.chunks, size)
        pinned = _is_etag(job.file.version)
        try:
            try:
                budget = RetryBudget(job.file.url, retry, timeout)
                _fetch_parts(job, source, out, parts, (slots, budget), pinned)
            except ObjectChangedError:
                # The listing still gives the footer's version: its ETag is not the one the
                # GETs answer with (a CDN's, say). The parts then pin the first answer's.
                if not pinned or changed_since(job.file) is not None:
                    raise
                budget = RetryBudget(job.file.url, retry, timeout)
                _fetch_parts(job, source, out, parts, (slots, budget), False)
        except _STALE as err:
            raise StaleIndexError(
                f"{job.where}: the file changed on the server since its footer was read "
                f"({err}); construct the dataset again to read the new data"
            ) from err


def _fetch_parts(
    job: Fetch,
    source: Source,
    out: int,
    parts: list[tuple[int, int]],
    gates: tuple[Slots, RetryBudget],
    pinned: bool,
) -> None:
    """Fetches ``parts`` into a staging file of the object's layout, moving each part's
    chunk bytes into ``out`` once it is complete; ``pinned``: every part asks for the
    footer's ``ETag`` (``If-Match``)."""
    slots, budget = gates
    placed = _Placement(job.chunks)
    pin = ObjectPin(job.file.url)
    if pinned:
        pin.check(job.file.version, None)
    failed: list[OSError] = []
    with tempfile.TemporaryFile(dir=os.path.dirname(job.path) or ".") as staging:
        into = staging.fileno()

        def fetch(fd: int, start: int, length: int, deadline: float) -> None:
            source.fetch_range(fd, start, length, job.file.size, deadline, pin)

        def done(start: int) -> None:
            try:
                for src, dst, length in placed.pieces(start, _length_at(parts, start)):
                    copy_between(into, out, length, src, dst, job.file.url)
            except OSError as err:  # the part counts as fetched: raised once all have ended
                failed.append(err)

        fetch_parts(
            fetch,
            into,
            parts,
            tmp=temp_path_for(job.path),  # names a hedge's scratch files, never created
            budget=budget,
            slots=slots,
            limit=host_limit(source, slots),
            done=done,
            permanent=(*PERMANENT, *_STALE, RangeIgnoredError),
        )
    if failed:
        raise failed[0]


def _is_etag(version: str) -> bool:
    """Whether a listing's version is an ``ETag`` as answers carry it (quoted, strong)."""
    return len(version) > 2 and version.startswith('"') and version.endswith('"')


def _length_at(parts: list[tuple[int, int]], start: int) -> int:
    return parts[bisect.bisect_left(parts, (start, 0))][1]


class _Placement:
    """Where each byte of the chunks goes in the local file (the chunks back to back)."""

    def __init__(self, chunks: list[tuple[int, int]]) -> None:
        self.starts = [start for start, _ in chunks]
        self.chunks = chunks
        self.local: list[int] = []  # each chunk's offset in the local file
        at = 0
        for _, length in chunks:
            self.local.append(at)
            at += length

    def pieces(self, start: int, length: int) -> list[tuple[int, int, int]]:
        """``(object offset, local offset, length)`` of the chunk bytes in the object's
        range ``[start, start + length)`` (the gaps a GET read through are left out)."""
        end = start + length
        out = []
        i = max(bisect.bisect_right(self.starts, start) - 1, 0)
        while i < len(self.chunks) and self.chunks[i][0] < end:
            first, size = self.chunks[i]
            lo, hi = max(first, start), min(first + size, end)
            if lo < hi:
                out.append((lo, self.local[i] + lo - first, hi - lo))
            i += 1
        return out


def _reserve(fd: int, size: int) -> None:
    """Reserves the local file's blocks (a full disk fails here, not mid-fetch)."""
    try:
        os.posix_fallocate(fd, 0, size)
    except (AttributeError, OSError):
        os.ftruncate(fd, size)
