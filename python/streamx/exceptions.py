"""Exceptions raised by streamx.

Each one also derives from the stdlib exception a user of mosaicml-streaming would catch
(``ValueError`` for bad data), so existing ``except`` clauses keep working.
"""

from __future__ import annotations

__all__ = [
    "ChecksumError",
    "CorruptIndexError",
    "CorruptShardError",
    "NeedsPythonEncoding",
    "StaleIndexError",
    "StreamxError",
]


class StreamxError(Exception):
    """Base of every streamx-specific error."""


class CorruptShardError(StreamxError, ValueError):
    """A shard file's bytes contradict its header, offsets or index entry."""


class CorruptIndexError(StreamxError, ValueError):
    """An ``index.json`` that is not a valid MDS index."""


class ChecksumError(StreamxError, ValueError):
    """A downloaded or decompressed file whose digest differs from the index."""


class StaleIndexError(StreamxError, ValueError):
    """A cached ``index.json`` that no longer describes the remote's files (the dataset was
    rewritten there): delete the local directory or use a fresh one."""


class NeedsPythonEncoding(StreamxError, TypeError):
    """Internal: the Rust fast path declined a value; the exact Python encoder takes over."""
