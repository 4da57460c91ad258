"""Samples of a remote tar read by byte range before the whole tar has arrived.

The members of one sample lie together in a tar, so where its member table is known a
sample is one ranged GET of its members' span away, decoded from those bytes exactly as
from the cached copy. A tar's table is known without the tar when the dataset scanned its
headers (the table cached in ``local``); a tar listed by a wids shard index has only a count,
so its headers are scanned by range from the start, only as far as the samples read so
far (the first sample of a tar costs one window of 64 KiB, which usually holds its bytes
too). Meanwhile the whole tar downloads as before: an epoch starts the download of the tar
it reads first, so its first samples arrive by range while the tar is still on its way,
and each later read checks for the cached copy first, which serves everything once it is
there.

As for MDS shards (:mod:`streamx.cache.range_reads`), ranges only bridge the wait:

- Only tars of at least ``MIN_TAR_BYTES`` of a remote source are read by range (a smaller
  one arrives about as soon as its ranges would), and only while ``STREAMX_RANGE_READS``
  is not ``0``.
- Every byte read by range is fetched twice, so a process reads at most ``BUDGET`` bytes
  of a tar by range (header windows included), and at most a quarter of it, before the
  tar's copy is here; past that a reader waits for the whole tar, which is then fetched
  (and counted against ``cache_limit``) as any tar is.
- What was read by range is held in memory, by at most ``_KEEP`` tars per process, and
  never lands in the cache directory: ``cache_limit`` does not count it.
- Every GET checks the tar's size (``Content-Range``) against the table's, and is pinned
  to the version the first one answered (``If-Match``); once that first GET is in, the
  tar's size and version now are compared with those its table was read at. A tar
  rewritten since raises ``StaleIndexError``: no sample mixes two versions.
- A GET that fails for any other reason (after ``download_retry`` attempts of
  ``download_timeout`` seconds each) leaves the sample to the whole tar's download, which
  reports the failure.

A range GET holds no connection slot: it is small, and it is what a reader waits for.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from streamx.exceptions import (
    CorruptShardError,
    ObjectChangedError,
    SizeMismatchError,
    StaleIndexError,
)
from streamx.format.remote_files import RemoteFile, changed_since
from streamx.format.webdataset.samples import SampleGrouper, TarSample
from streamx.format.webdataset.tar_members import Member, iter_members
from streamx.location import Location
from streamx.storage import throttle
from streamx.storage.object_pin import ObjectPin
from streamx.storage.object_sources import Source, source_for
from streamx.storage.parts import backoff_delay
from streamx.storage.settings import range_reads_enabled
from streamx.storage.throttle import ThrottledError

__all__ = [
    "BUDGET",
    "MIN_TAR_BYTES",
    "RangedTar",
    "TarTarget",
    "forget_ranged",
    "ranged_tar",
    "readable_by_range",
    "span_of",
]

logger = logging.getLogger(__name__)

# Smaller tars arrive in about the time of the GETs that would read them by range.
MIN_TAR_BYTES = 4 << 20
# The most bytes of one tar a process reads by range (and at most a quarter of the tar).
BUDGET = 8 << 20
# Tars whose ranges one process keeps in memory; the least recently read is dropped.
_KEEP = 4
# fsspec's own local and in-memory file systems: no network between us and the bytes.
_NO_NETWORK_SCHEMES = ("local", "memory")

_Key = tuple[str, int, str]


@dataclass(frozen=True)
class TarTarget:
    """A tar to read by range: its source, its index's sample count, and what its stream
    allows a GET."""

    file: RemoteFile
    samples: int
    timeout: float
    retry: int

    @property
    def key(self) -> _Key:
        return (self.file.url, self.file.size, self.file.version)


def span_of(sample: TarSample) -> tuple[int, int]:
    """The bytes ``[start, end)`` of the tar that hold every field of ``sample``."""
    if not sample.fields:
        return 0, 0
    return sample.fields[0].offset, max(f.offset + f.size for f in sample.fields)


def _allowance(size: int) -> int:
    return min(BUDGET, size // 4)


class _OverBudget(Exception):
    """A header window would pass the tar's range budget."""


class RangedTar:
    """The samples of one tar read by range so far (and, for a tar listed by a shard index,
    the part of its member table scanned so far).

    Args:
        target: The tar.
        table: Its whole member table, where it is cached; None to scan its headers by
            range as far as the samples read.
        save: Called with the whole table once a scan by range has read it all.
    """

    def __init__(
        self,
        target: TarTarget,
        table: Sequence[TarSample] | None,
        save: Callable[[list[TarSample]], None],
    ) -> None:
        self.target = target
        self._source: Source = source_for(target.file.url)
        # Every GET of this object after the first asks for the version the first got.
        self._pin = ObjectPin(target.file.url)
        self._confirmed = False
        self._lock = threading.Lock()
        self._spans: dict[int, bytes] = {}
        self._table: list[TarSample] = list(table or [])
        self._complete = table is not None
        self._save = save
        self._members: Iterator[Member] | None = None
        self._grouper = SampleGrouper(target.file.url)
        self._scan_ended = False  # the scan by range stopped short (budget, failed GET)
        # The header windows of the scan, in order: bytes of the tar read on through
        # bodies, which serve the samples they hold.
        self._windows: list[tuple[int, bytes]] = []

    def read(self, index: int) -> tuple[TarSample, int, bytes] | None:
        """Sample ``index``, the offset of its span and the span's bytes; None when the
        sample must wait for the whole tar (the budget is spent, or a GET failed).

        Raises:
            StaleIndexError: If the tar's size or version differs from its table's.
            CorruptShardError: If the headers scanned contradict the index (naming the tar).
        """
        with self._lock:
            sample = self._sample(index)
            if sample is None:
                return None
            if not sample.fields:
                return sample, 0, b""
            start, end = span_of(sample)
            data = self._spans.get(index)
            if data is None:
                data = self._in_windows(start, end)
            if data is None:
                if not _afford(self.target, end - start):
                    return None
                data = self._get_or_none(start, end - start)
                if data is None:
                    return None
                self._spans[index] = data
            return sample, start, data

    def _sample(self, index: int) -> TarSample | None:
        while index >= len(self._table) and not self._complete:
            if not self._scan_on():
                return None
        if index >= len(self._table):
            raise CorruptShardError(
                f"{self.target.file.url} holds {len(self._table)} samples; its index says "
                f"{self.target.samples}"
            )
        return self._table[index]

    def _scan_on(self) -> bool:
        """Reads the next member's header; False when the scan by range cannot go on."""
        if self._scan_ended:
            return False
        file = self.target.file
        if self._members is None:
            self._members = iter_members(self._scan_read, file.size, file.url)
        try:
            member = next(self._members, None)
        except _OverBudget:
            self._scan_ended = True
            return False
        except OSError as err:
            self._scan_ended = True
            logger.info("range reads of %s failed (%r); waiting for the tar", file.url, err)
            return False
        except BaseException:
            # A scan that raised is over (a generator does not resume): never read its end
            # as the archive's.
            self._scan_ended = True
            raise
        done = self._grouper.finish() if member is None else self._grouper.add(member)
        if done is not None:
            self._table.append(done)
        if len(self._table) > self.target.samples:
            raise CorruptShardError(
                f"{file.url} holds more than the {self.target.samples} samples its index says"
            )
        if member is None:
            self._complete = True
            if len(self._table) == self.target.samples:
                self._save(self._table)
        return True

    def _scan_read(self, start: int, length: int) -> bytes:
        if not _afford(self.target, length):
            raise _OverBudget
        data = self._get(start, length)
        self._windows.append((start, data))
        return data

    def _in_windows(self, start: int, end: int) -> bytes | None:
        """The span's bytes, where the header windows read hold them all."""
        pieces, at = [], start
        for window, data in self._windows:
            if window <= at < window + len(data):
                piece = data[at - window : end - window]
                pieces.append(piece)
                at += len(piece)
            if at >= end:
                return b"".join(pieces)
        return None

    def _get_or_none(self, start: int, length: int) -> bytes | None:
        try:
            return self._get(start, length)
        except StaleIndexError:
            raise
        except OSError as err:
            logger.info(
                "range GET of %s failed (%r); waiting for the tar", self.target.file.url, err
            )
            return None

    def _get(self, start: int, length: int) -> bytes:
        """Bytes ``[start, start + length)``, retried like a download.

        Raises:
            StaleIndexError: If the tar is not the one its table was read from.
            OSError: If every attempt failed.
        """
        target = self.target
        url = target.file.url
        attempt = 0
        while True:
            attempt += 1
            try:
                # Throttled answers are waited out, not failed attempts.
                data = throttle.waiting_out(lambda: self._get_once(start, length), url)
            except SizeMismatchError as err:
                if attempt >= target.retry:
                    raise self._stale(f"is now {err.size} bytes") from err
            except ObjectChangedError as err:
                raise self._stale(f"changed on the server ({err})") from err
            except (FileNotFoundError, PermissionError, ThrottledError):
                raise
            except Exception:
                if attempt >= target.retry:
                    raise
            else:
                if not self._confirmed:
                    self._confirm()
                return data
            time.sleep(backoff_delay(attempt))

    def _get_once(self, start: int, length: int) -> bytes:
        deadline = time.monotonic() + self.target.timeout
        if not self._pin.known:
            # Until an answer has pinned a version (the first GET failed, or the server
            # gives none), each GET leads: its answer's version is read.
            self._pin = ObjectPin(self.target.file.url)
        fd = _scratch()
        try:
            self._source.fetch_range(fd, start, length, self.target.file.size, deadline, self._pin)
            data = os.pread(fd, length, start)
        finally:
            os.close(fd)
        if len(data) != length:
            raise OSError(f"{self.target.file.url}: got {len(data)} of {length} bytes at {start}")
        return data

    def _confirm(self) -> None:
        """After the first GET pinned a version: the tar is still the one its table was
        read from (a rewrite before that GET shows here; one after it fails the pinned GETs).

        Raises:
            StaleIndexError: If the tar's size or version changed.
        """
        file = self.target.file
        now = changed_since(file)
        if now is not None:
            raise self._stale(
                f"changed since its member table was read (size {file.size} -> {now.size}, "
                f"version {file.version!r} -> {now.version!r})"
            )
        self._confirmed = True

    def _stale(self, what: str) -> StaleIndexError:
        forget_ranged(self.target)
        return StaleIndexError(
            f"{self.target.file.url}: the tar {what}; no sample of it is read by range from "
            "the new version: construct the dataset again to read the new data"
        )


def _scratch() -> int:
    """An unnamed file a range lands in (at its own offset: holes before it)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("streamx-tar-range", os.MFD_CLOEXEC)
    fd, name = tempfile.mkstemp(prefix="streamx-tar-range-")
    os.unlink(name)
    return fd


_LOCK = threading.Lock()
_OPEN: OrderedDict[_Key, RangedTar] = OrderedDict()
_SPENT: dict[_Key, int] = {}  # bytes of each tar this process read by range


def _forked() -> None:
    """In a forked child: the parent's ranges and pins are its own, and a lock another of
    its threads held at the fork would never be released here."""
    global _LOCK
    _LOCK = threading.Lock()
    _OPEN.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def _afford(target: TarTarget, length: int) -> bool:
    """Counts ``length`` bytes against the tar's budget; False (nothing counted) past it."""
    with _LOCK:
        spent = _SPENT.get(target.key, 0)
        if spent + length > _allowance(target.file.size):
            return False
        _SPENT[target.key] = spent + length
        return True


def readable_by_range(file: RemoteFile) -> bool:
    """Whether samples of ``file`` may be read by range before it is downloaded."""
    if file.size < MIN_TAR_BYTES or not range_reads_enabled():
        return False
    where = Location.parse(file.url)
    return where.is_remote and where.scheme not in _NO_NETWORK_SCHEMES


def ranged_tar(
    target: TarTarget,
    table: Callable[[], Sequence[TarSample] | None],
    save: Callable[[list[TarSample]], None],
) -> RangedTar | None:
    """The process's range reads of ``target``, opened if needed; None when it is not read
    by range (too small, local, range reads off, or its budget spent).

    Args:
        target: The tar.
        table: Returns its cached member table, or None where there is none yet.
        save: Saves the member table a scan by range read whole.
    """
    if not readable_by_range(target.file):
        return None
    key = target.key
    with _LOCK:
        found = _OPEN.get(key)
        if found is not None:
            _OPEN.move_to_end(key)
            return found
        if _SPENT.get(key, 0) >= _allowance(target.file.size):
            return None
    opened = RangedTar(target, table(), save)
    with _LOCK:
        found = _OPEN.setdefault(key, opened)
        _OPEN.move_to_end(key)
        while len(_OPEN) > _KEEP:
            _OPEN.popitem(last=False)
    return found


def forget_ranged(target: TarTarget, *, arrived: bool = False) -> None:
    """Drops what was read of ``target`` by range: it is stale, or (``arrived``) its whole
    copy is here, and a later download of it (once evicted) may bridge its wait by range
    again, as a fresh budget."""
    with _LOCK:
        _OPEN.pop(target.key, None)
        if arrived:
            _SPENT.pop(target.key, None)
