"""One tar shard: a local tar read where it lies, or a remote one fetched whole into the
cache, its samples read by range from there (or from the remote tar while it is still on
its way)."""

from __future__ import annotations

import errno
import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NoReturn

from streamx.exceptions import CorruptShardError
from streamx.format.held_file import HeldFile
from streamx.format.index import ShardInfo
from streamx.format.remote_files import RemoteFile, check_unchanged, confirm_unchanged
from streamx.format.webdataset.decoders import decode_field
from streamx.format.webdataset.index import (
    TABLES,
    file_table,
    load_table,
    save_bytes,
    save_table,
)
from streamx.format.webdataset.member_table import decode_table
from streamx.format.webdataset.samples import TarSample
from streamx.format.webdataset.tar_ranges import (
    RangedTar,
    TarTarget,
    forget_ranged,
    ranged_tar,
    span_of,
)
from streamx.storage.download import download_file

__all__ = ["TarShardReader", "fetch_tar"]

# Samples of one batch whose spans lie at most this far apart are read in one go: the gap
# between two neighbours is the next one's header (and padding), a few hundred bytes.
_GAP = 16 << 10


def _source(shard: ShardInfo) -> RemoteFile:
    extra = shard.extra
    return RemoteFile(extra["source"], int(extra["source_size"]), str(extra["source_version"]))


def fetch_tar(shard: ShardInfo, timeout: float, retry: int) -> int:
    """Downloads the tar to its cache file (atomically, never past its size); returns its
    size. A local tar read in place is its own file: checked, never written.

    Raises:
        StaleIndexError: If the tar changed since its member table was read.
        FileNotFoundError: If a local tar read in place is missing.
    """
    source = _source(shard)
    if shard.extra.get("in_place"):
        path = shard.local_path(shard.raw_data)
        HeldFile(path, source.size, source.url, source.version).close()
        return source.size
    check_unchanged(source, source.url)  # once per process: a stale tar is not downloaded
    path = shard.local_path(shard.raw_data)
    download_file(source.url, path, retry=retry, timeout=timeout, expected_size=source.size)
    # The download's parts are pinned to the version its first part got, which a rewrite
    # since the check above may have changed (same size): compared now, it is the version
    # the member table was read from, or the copy goes (the cache removes a failed fetch).
    confirm_unchanged(source, source.url)
    return source.size


_TABLES: OrderedDict[str, Sequence[TarSample]] = OrderedDict()
_KEEP_TABLES = 16


def _table_path(shard: ShardInfo) -> str:
    return os.path.join(shard.dirname, shard.split, TABLES, shard.extra["table"])


def _remember(path: str, samples: Sequence[TarSample]) -> None:
    _TABLES[path] = samples
    while len(_TABLES) > _KEEP_TABLES:
        _TABLES.popitem(last=False)


def _counted(shard: ShardInfo, samples: Sequence[TarSample]) -> Sequence[TarSample]:
    if len(samples) != shard.samples:
        raise CorruptShardError(
            f"{shard.extra['source']} holds {len(samples)} samples; its index says {shard.samples}"
        )
    return samples


def _cached_samples(shard: ShardInfo) -> Sequence[TarSample] | None:
    """The tar's member table where it is cached (in memory or in ``local``), else None."""
    path = _table_path(shard)
    found = _TABLES.get(path)
    if found is not None:
        _TABLES.move_to_end(path)
    elif os.path.exists(path):
        found = load_table(path, shard.extra["source"], int(shard.extra["source_size"]))
        _remember(path, found)
    return None if found is None else _counted(shard, found)


def _samples(shard: ShardInfo, local: str) -> Sequence[TarSample]:
    """The tar's member table: cached, or read from its cached copy ``local`` and saved
    (a tar listed by a shard index is not scanned before its first use)."""
    found = _cached_samples(shard)
    if found is not None:
        return found
    source, path = _source(shard), _table_path(shard)
    data = file_table(local, source)
    save_bytes(path, data)
    found = decode_table(data, source.size)
    _remember(path, found)
    return _counted(shard, found)


def _save(shard: ShardInfo, samples: Sequence[TarSample]) -> None:
    path = _table_path(shard)
    save_table(path, _source(shard), samples)
    _remember(path, samples)


def _target(shard: ShardInfo) -> TarTarget:
    extra = shard.extra
    timeout, retry = float(extra.get("timeout", 60.0)), int(extra.get("retry", 2))
    return TarTarget(_source(shard), shard.samples, timeout, retry)


def _ranged(shard: ShardInfo, target: TarTarget) -> RangedTar | None:
    """The process's range reads of the tar (None: it waits for the whole tar)."""
    return ranged_tar(target, lambda: _cached_samples(shard), lambda found: _save(shard, found))


class TarShardReader:
    """Samples of one tar, as ``{"__key__", "__url__", field: value, ...}``: from the local
    tar itself or its cached copy, or by range while a remote tar is not here yet
    (:mod:`~streamx.format.webdataset.tar_ranges`).

    Raises ``FileNotFoundError`` (as it is built, or for a sample) while the tar is not
    here and the sample cannot be read by range: the caller then fetches the whole tar.
    """

    def __init__(self, shard: ShardInfo) -> None:
        self.shard = shard
        self._url = str(shard.extra["source"])
        self._path = shard.local_path(shard.raw_data)
        self._file: HeldFile | None = None
        self._samples: Sequence[TarSample] = []
        self._names: tuple[str, ...] | None = None
        self._names_seen = False
        # A local tar read in place is checked against the version its table was read at.
        in_place = bool(shard.extra.get("in_place", False))
        self._version = str(shard.extra["source_version"]) if in_place else None
        self._decode = bool(shard.extra.get("decode", True))
        self._images = bool(shard.extra.get("images", False))
        self._target = _target(shard)
        if not self._opened() and _ranged(shard, self._target) is None:
            self._missing()

    def __getstate__(self) -> dict[str, Any]:
        # An open file descriptor means nothing in another process: it is opened again.
        return {**self.__dict__, "_file": None}

    def _missing(self) -> NoReturn:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self._path)

    def _opened(self) -> bool:
        """Whether the cached copy is open (opened here once it has arrived)."""
        if self._file is not None:
            return True
        try:
            held = HeldFile(self._path, self.shard.raw_data.bytes, self._url, self._version)
        except FileNotFoundError:
            return False
        try:
            self._samples = _samples(self.shard, self._path)
        except BaseException:
            held.close()
            raise
        self._file = held
        forget_ranged(self._target, arrived=True)
        return True

    @property
    def url(self) -> str:
        """The tar's source, as each sample's ``__url__`` names it."""
        return self._url

    @property
    def options(self) -> tuple[bool, bool]:
        """Whether fields are decoded, and images as PIL images (the stream's options)."""
        return self._decode, self._images

    def field_names(self) -> tuple[str, ...] | None:
        """The fields every sample of the cached copy holds, in its order, or ``None`` if
        they differ between samples (or the tar is not here): looked at once per tar."""
        if not self._names_seen and self._opened():
            found = {tuple(f.name for f in sample.fields) for sample in self._samples}
            self._names = found.pop() if len(found) == 1 else None
            self._names_seen = True
        return self._names

    def local_spans(self, rows: list[int]) -> list[tuple[TarSample, int, memoryview]] | None:
        """Samples ``rows`` of the cached copy: each sample's members, where their span
        begins in the tar, and its bytes (neighbouring samples in one read); ``None`` while
        the tar is not here (its samples then come one by one, by range or once fetched).

        Raises:
            CorruptShardError: If the copy cuts a span short, naming the sample.
        """
        if not self._opened():
            return None
        assert self._file is not None
        samples = [self._samples[row] for row in rows]
        spans = [span_of(sample) for sample in samples]
        order = sorted(set(spans))
        views: dict[tuple[int, int], memoryview] = {}
        first = 0
        while first < len(order):
            start, end = order[first]
            last = first + 1
            while last < len(order) and order[last][0] - end <= _GAP:
                end = max(end, order[last][1])
                last += 1
            run = memoryview(self._file.pread(end - start, start) if end > start else b"")
            for span in order[first:last]:
                views[span] = run[span[0] - start : span[1] - start]
            first = last
        out = []
        for sample, span in zip(samples, spans, strict=True):
            view = views[span]
            if len(view) != span[1] - span[0]:
                raise CorruptShardError(
                    f"{self._url}, sample {sample.key!r} is cut short in {self._path}"
                )
            out.append((sample, span[0], view))
        return out

    def get(self, index: int) -> dict[str, Any]:
        if self._opened():
            assert self._file is not None
            sample = self._samples[index]
            start, end = span_of(sample)
            span = self._file.pread(end - start, start) if sample.fields else b""
        else:
            ranged = _ranged(self.shard, self._target)
            found = None if ranged is None else ranged.read(index)
            if found is None:  # the whole tar is needed: the caller fetches it
                self._missing()
            sample, start, span = found
            end = start + len(span)
        if len(span) != end - start:
            raise CorruptShardError(
                f"{self._url}, sample {sample.key!r} is cut short in {self._path}"
            )
        return self.decoded(sample, start, span)

    def decoded(self, sample: TarSample, start: int, span: bytes | memoryview) -> dict[str, Any]:
        """The sample from the bytes of its members' span (which begins at ``start``)."""
        url = self._url
        out: dict[str, Any] = {"__key__": sample.key, "__url__": url}
        # A sample's members lie together in the tar: one read covers them all.
        view = memoryview(span)
        for field in sample.fields:
            data = bytes(view[field.offset - start : field.offset - start + field.size])
            out[field.name] = (
                decode_field(field.name, data, self._images, url, sample.key)
                if self._decode
                else data
            )
        return out
