"""The ranges of one remote shard read so far (:mod:`range_reads`), in an anonymous file
the shard's size, decoded by the reader its format names (:mod:`range_formats`)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.cache.cached_files import stale_size
from streamx.cache.landed_reads import LandedBytes
from streamx.cache.range_formats import RangeFormat
from streamx.exceptions import (
    CorruptShardError,
    ObjectChangedError,
    SizeMismatchError,
    StaleIndexError,
)
from streamx.format.index import ShardInfo
from streamx.runtime import metrics
from streamx.storage import throttle
from streamx.storage.object_pin import ObjectPin
from streamx.storage.object_sources import Source, source_for
from streamx.storage.parts import backoff_delay
from streamx.storage.pool import range_pool
from streamx.storage.throttle import ThrottledError

__all__ = ["GaveWayError", "Partial", "Target"]

# Bytes fetched with the offset table, for the writer's config JSON that follows it.
_HEADER_SLACK = 16 << 10
# The most bytes read by range into one partial (and at most a quarter of the shard): every
# byte read by range is fetched twice, so ranges only bridge the wait for the first samples.
_BUDGET = 8 << 20
# The bytes read by range into a partial before a read waits for the parts of the shard's
# download under way instead (a process's first batch comes by range, whatever the download),
# where its first fetch did not say how much its first batch needs (``ahead``).
_FREE = 4 << 20
# Samples closer than this are fetched in one GET (a gap costs less than a request).
_MERGE_GAP = 64 << 10
# The smallest piece a range is split into, and the GETs a fetch's bytes are spread over
# (in parallel; more where its samples lie apart): a GET is capped at tens of MB/s, and a
# request is billed whatever its size.
_PIECE = 256 << 10
_PARALLEL = 4


class GaveWayError(OSError):
    """A range read left to the shard's download (its host throttles). Never reaches a
    user: the sample waits for the shard instead."""


@dataclass(frozen=True)
class Target:
    """Where a shard's bytes come from, how its format reads them, and what its stream
    allows a GET."""

    shard: ShardInfo
    url: str
    index_path: str
    timeout: float
    retry: int
    format: RangeFormat


def _anonymous_file(size: int) -> tuple[int, str]:
    """An unnamed file of ``size`` bytes (holes) and a path that opens it in this process."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("streamx-range", os.MFD_CLOEXEC)
        path = f"/proc/self/fd/{fd}"
    else:
        fd, name = tempfile.mkstemp(prefix="streamx-range-")
        os.unlink(name)
        path = f"/dev/fd/{fd}"
    try:
        os.ftruncate(fd, size)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no /proc or /dev/fd to reopen an unnamed file")
    except BaseException:
        os.close(fd)
        raise
    return fd, path


class Partial:
    """The ranges of one shard read so far, in an anonymous file the shard's size.

    Raises (when made):
        StaleIndexError: If the remote shard's size or sample count differs from the index,
            or (LitData) it was rewritten since its index was read.
        CorruptShardError: If its offset table contradicts its size.
        NotByRange: If its format says its samples cannot be served by range.
        OSError: If the header's GETs failed.
    """

    def __init__(self, target: Target, zero_copy: bool) -> None:
        self.target = target
        target.format.unchanged(target.shard)  # before any GET of it
        self.size = target.shard.raw_data.bytes
        self.source: Source = source_for(target.url)
        # Header and samples of one version: a rewrite fails a GET, and readers then wait
        # for the (pinned) download of the whole shard.
        self.pin = ObjectPin(target.url)
        shard = target.shard
        self.landed = LandedBytes(shard.local_path(shard.raw_data), self.size, self.pin)
        self.fd, path = _anonymous_file(self.size)
        try:
            self.offsets = self._header()
            raw = dataclasses.replace(target.shard.raw_data, basename=os.path.basename(path))
            mapped = dataclasses.replace(
                target.shard, dirname=os.path.dirname(path), split="", raw_data=raw, zip_data=None
            )
            self.reader = target.format.reader(mapped, zero_copy)
        except BaseException:
            os.close(self.fd)
            raise
        self.read = int(self.offsets[0])
        # Bytes read by range before reads wait for the download's parts (see fetch).
        self.free: int | None = None
        self.fetched = np.zeros(target.shard.samples, bool)
        self.lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        # Under the lock, and never reopened after: the descriptor's number may be reused
        # by another file, which `/proc/self/fd/<n>` would then name.
        with self.lock:
            if not self.closed:
                self.closed = True
                self.reader.close()
                os.close(self.fd)

    def sample(self, local: int) -> Any:
        """Sample ``local`` (fetched already), or None once the partial is closed."""
        with self.lock:
            return None if self.closed else self.reader.get(local)

    def _header(self) -> NDArray[np.int64]:
        """The validated offset table (and the config JSON after it, fetched)."""
        shard = self.target.shard
        n, size = shard.samples, self.size
        table = 4 * (n + 2)
        if table > size:
            self._stale(f"is {size} bytes, too small for the {n} samples the cached index gives")
        head_end = min(size, table + _HEADER_SLACK)
        self._bring(0, head_end)
        head = os.pread(self.fd, table, 0)
        count = int.from_bytes(head[:4], "little")
        if count != n:
            self._stale(f"holds {count} samples, the cached index says {n}")
        offsets = np.frombuffer(head, "<u4", offset=4).astype(np.int64)
        if offsets[0] < table or (np.diff(offsets) < 0).any():
            raise CorruptShardError(
                f"{self.target.url}: the offset table contradicts the shard's {size} bytes"
            )
        self.target.format.check(offsets, size, self.target.url)
        if offsets[0] > head_end:
            self._bring(head_end, int(offsets[0]) - head_end)
        return offsets

    def _bring(self, start: int, length: int) -> None:
        """Bytes ``[start, start + length)`` into place: copied where a download of the
        shard has them in place already, else by GET."""
        bounds = np.array([start], np.int64), np.array([start + length], np.int64)
        if not self.landed.copy(self.fd, *bounds)[0]:
            self.get(start, length)

    def _stale(self, what: str) -> None:
        raise StaleIndexError(
            f"{self.target.url} {what}: the cached {self.target.index_path} appears stale "
            "versus the remote (was the dataset rewritten?). Delete "
            f"{os.path.dirname(self.target.index_path)} or use a fresh `local` directory."
        )

    def get(self, start: int, length: int) -> None:
        """GETs bytes ``[start, start + length)`` into place, retrying like a download."""
        target = self.target

        def throttling() -> bool:
            return not throttle.host_calm(target.url)

        for attempt in range(1, target.retry + 1):
            if throttling():
                # A throttling store counts requests: the shard's own download brings
                # these bytes with the rest, in one request.
                raise GaveWayError(f"{target.url}: the host throttles; range reads give way")
            try:
                # Throttled answers are waited out, not failed attempts, unless the host
                # has begun throttling (this range read then gives way, as above).
                throttle.waiting_out(lambda: self._get_once(start, length), target.url, throttling)
                return
            except SizeMismatchError as err:
                if attempt == target.retry:
                    stale_size(target.shard.raw_data, target.index_path, err.size, err)
            except (FileNotFoundError, PermissionError, ObjectChangedError, ThrottledError):
                raise
            except Exception:
                if attempt == target.retry:
                    raise
            time.sleep(backoff_delay(attempt))

    def _get_once(self, start: int, length: int) -> None:
        deadline = time.monotonic() + self.target.timeout
        self.source.fetch_range(self.fd, start, length, self.size, deadline, self.pin)

    def _get_all(self, pieces: list[tuple[int, int]]) -> None:
        """GETs every ``(start, length)`` piece, in parallel on the range threads; this
        thread takes the first one itself."""
        futures = [range_pool().submit(self.get, *piece) for piece in pieces[1:]]
        try:
            self.get(*pieces[0])
        finally:
            errors = [f.exception() for f in futures]
        for error in errors:
            if error is not None:
                raise error

    def fetch(
        self,
        local_ids: NDArray[np.int64],
        past_budget: bool = False,
        ahead: NDArray[np.int64] | None = None,
        coming: bool = False,
    ) -> bool:
        """Reads the samples ``local_ids`` lacks: copied where a download of the shard has
        them in place already, else by range GET. False when the GETs would pass the
        budget (unless ``past_budget``: the shard's download has stalled).

        ``ahead``: the samples the process reads next (to the end of the chunk that ends
        its first batch), in order. A partial's first fetch brings them too, in the same
        GETs, as far as its budget allows, and its later reads wait for the shard's
        download (its parts land in about the time of the range GETs, which would fetch
        the bytes twice); without them, reads wait once the partial read ``_FREE`` bytes.
        ``coming``: the shard's download has been started (a wait then allows its record a
        moment to appear)."""
        with self.lock:
            if self.closed:
                return False
            first = self.free is None
            if first:
                local_ids = self._with_ahead(local_ids, ahead)
                self.free = _FREE
            try:
                wait = not first and not past_budget
                return self._fetch(local_ids, wait=wait, past=past_budget, coming=coming)
            finally:
                if first and ahead is not None:
                    self.free = self.read  # the first batch's bytes: the rest waits for parts

    def _fetch(self, local_ids: NDArray[np.int64], wait: bool, past: bool, coming: bool) -> bool:
        """``fetch``'s work, under the lock: ``wait`` for the download's parts once the
        partial read its free bytes; ``past`` the budget."""
        lacking = np.unique(local_ids[~self.fetched[local_ids]])
        if not len(lacking):
            return True
        wait = wait and self.read >= (self.free or 0)
        need = self._landed(lacking, wait=wait, coming=coming)
        if need is None:
            return False  # the shard's file is in place: read from it
        if not len(need):
            return True
        spans = _merged(self.offsets[need], self.offsets[need + 1])
        total = sum(end - start for start, end in spans)
        if self.read + total > self._budget() and not past:
            return False
        self._get_all(_pieces(spans))
        self.fetched[need] = True
        self.read += total
        return True

    def _budget(self) -> int:
        return min(_BUDGET, self.size // 4)

    def _with_ahead(
        self, local_ids: NDArray[np.int64], ahead: NDArray[np.int64] | None
    ) -> NDArray[np.int64]:
        """``local_ids`` and the leading samples of ``ahead`` whose bytes, with theirs,
        fit the budget."""
        if ahead is None or not len(ahead):
            return local_ids
        both: NDArray[np.int64] = np.concatenate([local_ids, ahead])
        sizes = self.offsets[both + 1] - self.offsets[both]
        fits = self.read + np.cumsum(sizes) <= self._budget()
        fits[: len(local_ids)] = True  # the chunk's own samples: the budget check decides
        kept: NDArray[np.int64] = both[fits]
        return kept

    def _landed(
        self, need: NDArray[np.int64], wait: bool, coming: bool
    ) -> NDArray[np.int64] | None:
        """The samples of ``need`` not copied from a download's landed parts (``wait``:
        waiting for them while that download progresses); None when its file is in place
        (the samples are read from it)."""
        if wait:
            with metrics.stalled():  # a reader waits here as for a shard not local
                copied, whole = self.landed.wait(
                    self.fd, self.offsets[need], self.offsets[need + 1], coming
                )
        else:
            copied = self.landed.copy(self.fd, self.offsets[need], self.offsets[need + 1])
            whole = False
        self.fetched[need[copied]] = True
        need = need[~copied]
        return None if whole and len(need) else need


def _pieces(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(start, length)`` pieces covering ``spans``: the bytes spread evenly over about
    ``_PARALLEL`` GETs (a GET is capped at tens of MB/s, so a range arrives sooner as
    several), none under ``_PIECE`` bytes unless its span is, at least one per span."""
    total = sum(end - start for start, end in spans)
    piece = max(_PIECE, -(-total // _PARALLEL))
    out = []
    for start, end in spans:
        step = -(-(end - start) // -(-(end - start) // piece))  # even pieces of <= piece
        out += [(at, min(step, end - at)) for at in range(start, end, step)]
    return out


def _merged(starts: NDArray[np.int64], ends: NDArray[np.int64]) -> list[tuple[int, int]]:
    """Sorted byte ranges joined where they are less than ``_MERGE_GAP`` apart."""
    spans: list[tuple[int, int]] = []
    for start, end in zip(starts.tolist(), ends.tolist()):
        if spans and start - spans[-1][1] < _MERGE_GAP:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return spans
