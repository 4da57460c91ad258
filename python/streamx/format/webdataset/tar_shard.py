"""One tar shard: fetched whole into the cache, its samples read by range from there."""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from streamx.exceptions import CorruptShardError
from streamx.format.held_file import HeldFile
from streamx.format.index import ShardInfo
from streamx.format.remote_files import RemoteFile, check_unchanged
from streamx.format.webdataset.decoders import decode_field
from streamx.format.webdataset.index import TABLES, load_table, save_table, table_samples
from streamx.format.webdataset.samples import TarSample
from streamx.storage.download import download_file

__all__ = ["TarShardReader", "fetch_tar"]


def _source(shard: ShardInfo) -> RemoteFile:
    extra = shard.extra
    return RemoteFile(extra["source"], int(extra["source_size"]), str(extra["source_version"]))


def fetch_tar(shard: ShardInfo, timeout: float, retry: int) -> int:
    """Downloads the tar to its cache file (atomically, never past its size); returns its
    size.

    Raises:
        StaleIndexError: If the tar changed since its member table was read.
    """
    source = _source(shard)
    check_unchanged(source, source.url)
    path = shard.local_path(shard.raw_data)
    download_file(source.url, path, retry=retry, timeout=timeout, expected_size=source.size)
    return source.size


_TABLES: OrderedDict[str, list[TarSample]] = OrderedDict()
_KEEP_TABLES = 16


def _samples(shard: ShardInfo, local: str) -> list[TarSample]:
    """The tar's member table: cached, or read from its cached copy ``local`` and saved
    (a tar listed by a shard index is not scanned before its first use)."""
    path = os.path.join(shard.dirname, shard.split, TABLES, shard.extra["table"])
    found = _TABLES.get(path)
    if found is None:
        if os.path.exists(path):
            found = load_table(path, shard.extra["source"])
        else:
            source = _source(shard)
            with open(local, "rb") as f:
                found = table_samples(lambda start, n: os.pread(f.fileno(), n, start), source)
            save_table(path, source, found)
        _TABLES[path] = found
        while len(_TABLES) > _KEEP_TABLES:
            _TABLES.popitem(last=False)
    else:
        _TABLES.move_to_end(path)
    if len(found) != shard.samples:
        raise CorruptShardError(
            f"{shard.extra['source']} holds {len(found)} samples; its index says {shard.samples}"
        )
    return found


class TarShardReader:
    """Samples of one cached tar, as ``{"__key__", "__url__", field: value, ...}``."""

    def __init__(self, shard: ShardInfo) -> None:
        self.shard = shard
        self._path = shard.local_path(shard.raw_data)
        self._file = HeldFile(self._path, shard.raw_data.bytes, str(shard.extra["source"]))
        self._samples = _samples(shard, self._path)
        self._decode = bool(shard.extra.get("decode", True))
        self._images = bool(shard.extra.get("images", False))

    def get(self, index: int) -> dict[str, Any]:
        sample = self._samples[index]
        url = self.shard.extra["source"]
        out: dict[str, Any] = {"__key__": sample.key, "__url__": url}
        if not sample.fields:
            return out
        # A sample's members lie together in the tar: one read covers them all.
        start = sample.fields[0].offset
        end = max(f.offset + f.size for f in sample.fields)
        span = self._file.pread(end - start, start)
        if len(span) != end - start:
            raise CorruptShardError(f"{url}, sample {sample.key!r} is cut short in {self._path}")
        view = memoryview(span)
        for field in sample.fields:
            data = bytes(view[field.offset - start : field.offset - start + field.size])
            out[field.name] = (
                decode_field(field.name, data, self._images, url, sample.key)
                if self._decode
                else data
            )
        return out
