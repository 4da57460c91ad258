"""A dataset's files as the cache ledger sees them, found without a walk over the shards.

An index of 650k shards is read into Rust columns (:class:`~streamx.format.lazy_shards.
ShardList`); building a :class:`~streamx.format.index.ShardInfo` per shard to register its
files with the ledger, and looking for each shard's files in the cache, took most of a
remote dataset's construction. Instead the ledger reads a shard's files from the index
tables when it evicts the shard, and the cache is checked by listing each directory the
shards' files live in once: only the shards found there (or that the ledger holds) get the
per-shard checks.

A file name may hold sub-directories (merged indexes). Each such directory part is resolved
to its real path here, once: the ledger deletes a file only under that path (never through a
symlink planted there later), and never a file whose directory leads out of the stream's
``local``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streamx import _core
from streamx.cache.cached_files import ledger_entries, listed_names
from streamx.format.lazy_shards import IndexPart, ShardList
from streamx.location import INDEX_BASENAME

__all__ = ["RemoteIndex", "cached_shards", "ledger_parts", "listed_files", "remote_indexes"]

# What a cache directory holds at its top that the index refuses as a shard file's name.
_NOT_SHARD_FILES = frozenset((INDEX_BASENAME, ".streamx"))


@dataclass(frozen=True)
class RemoteIndex:
    """The shards of one index of a stream with a remote, from global shard id ``start``."""

    start: int
    part: IndexPart
    dirs: list[str]  # the directory parts of its file names ("": the top)

    def directory(self, key: str) -> str:
        """Where the files of directory part ``key`` live."""
        return os.path.join(self.part.dirname, self.part.split, key)


def remote_indexes(shards: ShardList, remote: NDArray[np.bool_]) -> list[RemoteIndex] | None:
    """The indexes whose shards come from a remote (``remote``: per shard), or None when
    one is not an index read into columns (a source read in place lists its units in Python:
    the ledger then takes each shard's files, see :func:`listed_files`)."""
    found = []
    for start, part in shards.spans():
        if len(part.index) and bool(remote[start]):
            index: object = part.index
            if not isinstance(index, _core.ShardIndex):
                return None
            found.append(RemoteIndex(start, part, index.file_dirs()))
    return found


def listed_files(
    shards: ShardList, remote: NDArray[np.bool_]
) -> tuple[list[list[str]], list[list[int]]]:
    """Each shard's files the ledger may delete and the sizes the index gives them, shard by
    shard (``ledger_entries``; none for a shard without a remote)."""
    real_dirs: dict[str, str] = {}
    entries = [
        ledger_entries(shard, real_dirs) if there else []
        for shard, there in zip(shards, remote.tolist())
    ]
    return [[path for path, _ in e] for e in entries], [[size for _, size in e] for e in entries]


def ledger_parts(indexes: list[RemoteIndex]) -> list[tuple[_core.ShardIndex, int, dict[str, str]]]:
    """The ledger's ``indexed`` argument: each index with the real path of each directory
    part of its file names that lies inside the stream's ``local``."""
    parts = []
    real_dirs: dict[str, str] = {}

    def real(directory: str) -> str:
        found = real_dirs.get(directory)
        if found is None:
            found = real_dirs[directory] = os.path.realpath(directory)
        return found

    for index in indexes:
        root = real(index.part.dirname)
        dirs = {}
        for key in index.dirs:
            where = real(index.directory(key))
            if where == root or where.startswith(root + os.sep):
                dirs[key] = where
        parts.append((index.part.index, index.start, dirs))
    return parts


def cached_shards(indexes: list[RemoteIndex]) -> list[int]:
    """Global ids of the shards with a file, or a temporary of one, in the cache now (by
    name: whether it is of use is for the per-shard checks to say)."""
    found: list[int] = []
    for index in indexes:
        names = [
            (key, name)
            for key in index.dirs
            for name in listed_names(index.directory(key))
            if key or name not in _NOT_SHARD_FILES
        ]
        if names:  # a cold cache holds only what no shard file may be named
            found += [index.start + s for s in index.part.index.shards_with(names)]
    return found
