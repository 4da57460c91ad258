"""The Parquet footers parsed in this process, kept up to a number of bytes, least recently
used first out.

Every row group read needs its file's parsed footer (its ``FileMetaData``), and parsing one
costs about 8 µs per KiB of footer: a footer parsed once, by the index build or a first
read, serves the process's later reads. Kept unbounded, a dataset of many thousands of
files would keep every one. The bound is ``STREAMX_PARQUET_FOOTER_BYTES`` (a size such as
``'256mb'``; ``0`` keeps only the footer last used), read once per process on first use;
each process (each DataLoader worker) keeps its own, and a forked worker starts with its
parent's. A footer sent out is read again from its cached file (on local disk, named by its
file's URL, size and version: never another version's) and parsed again when a read needs
it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from streamx.format.parquet.decoded_cache import DecodedCache, env_bytes

__all__ = ["DEFAULT_FOOTER_BYTES", "KEPT", "CachedFooter", "footer_bytes_limit", "parquet_schema"]

# Half the decoded row groups' default bound (512 MiB): with footers of tens of KiB
# (charged ~9x, below), about a thousand files' footers stay parsed, as many as a
# dataset of that many files uses; a worker of eight still keeps at most 2 GiB in all.
DEFAULT_FOOTER_BYTES = 256 << 20
# pyarrow's parsed FileMetaData took 3.9x to 8.5x its Thrift bytes, plus ~10 KiB (pyarrow
# 26, 3 to 200 columns, 4 to 50 row groups; RSS over 2,000 parses): charged at the most.
_PARSED_PER_BYTE = 8
_PARSED_FIXED = 12 << 10


@dataclass(frozen=True)
class CachedFooter:
    """A cached footer, as one process keeps it."""

    metadata: Any  # its ``pyarrow.parquet.FileMetaData``
    thrift: bytes  # its FileMetaData's bytes, which the core reads (the offset indexes' spans)

    @functools.cached_property
    def schema(self) -> Any:
        """Its Arrow schema, made on first use (about as long as the parse, per file)."""
        return parquet_schema(self.metadata).to_arrow_schema()

    @property
    def nbytes(self) -> int:
        """What it is charged: its bytes and an estimate of its parsed metadata."""
        return len(self.thrift) * (1 + _PARSED_PER_BYTE) + _PARSED_FIXED


def parquet_schema(md: Any) -> Any:
    """``md``'s ``pyarrow.parquet.ParquetSchema``, made anew. ``md.schema`` is never read:
    it keeps the schema it makes, which refers back to ``md``, a cycle that only the cyclic
    collector frees, so a footer sent out of the cache would stay in memory until that
    collector happens to run."""
    import pyarrow.parquet as pq

    return pq.ParquetSchema(md)


def footer_bytes_limit() -> int:
    """``STREAMX_PARQUET_FOOTER_BYTES``, or the default.

    Raises:
        ValueError: If the variable is not a size of zero or more.
    """
    return env_bytes("STREAMX_PARQUET_FOOTER_BYTES", DEFAULT_FOOTER_BYTES)


# By the cached footer's path (a digest of its file's URL, size and version).
KEPT: DecodedCache[CachedFooter] = DecodedCache(read_limit=footer_bytes_limit)
