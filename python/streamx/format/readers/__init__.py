"""Sample readers over a list of shards: Rust memory maps for MDS, Python for split formats.

Each reader's module is imported when a dataset first needs that reader: a Parquet, tar or
LitData dataset does not import the MDS reader, nor an MDS dataset the others'.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from streamx.format.index import ShardInfo, ShardList
from streamx.format.readers.base import SampleReader

if TYPE_CHECKING:
    from streamx.format.parquet.batch_rows import ParquetRows
    from streamx.format.readers.mds import MDSSampleReader
    from streamx.format.readers.mixed import MixedSampleReader

__all__ = ["SampleReader", "make_reader", "mds_reader", "parquet_rows", "reads_flat_parquet"]


def make_reader(shards: Sequence[ShardInfo], *, zero_copy: bool = False) -> SampleReader:
    """Returns the fastest reader that handles every shard in ``shards`` (``zero_copy``:
    views over the memory maps of MDS shards, see :class:`MDSSampleReader`)."""
    if isinstance(shards, ShardList):
        only_mds = shards.formats() <= {"mds"}
    else:
        only_mds = all(shard.format == "mds" for shard in shards)
    if only_mds:
        from streamx.format.readers.mds import MDSSampleReader

        return MDSSampleReader(shards, zero_copy=zero_copy)
    from streamx.format.readers.mixed import MixedSampleReader

    return MixedSampleReader(shards)


def mds_reader(reader: object) -> MDSSampleReader | None:
    """``reader`` if it is an MDS reader, else None; never imports the MDS reader (none
    exists before its module is loaded)."""
    mds = sys.modules.get("streamx.format.readers.mds")
    if mds is None or not isinstance(reader, mds.MDSSampleReader):
        return None
    return cast("MDSSampleReader", reader)


def parquet_rows(reader: object) -> ParquetRows | None:
    """The batch reader of ``reader`` if it reads only Parquet row groups, else None; never
    imports a reader (neither exists before its module is loaded)."""
    mixed = sys.modules.get("streamx.format.readers.mixed")
    rows_module = sys.modules.get("streamx.format.parquet.batch_rows")
    if mixed is None or rows_module is None or not isinstance(reader, mixed.MixedSampleReader):
        return None
    rows = cast("MixedSampleReader", reader).batch_reader
    return cast("ParquetRows", rows) if isinstance(rows, rows_module.ParquetRows) else None


def reads_flat_parquet(reader: object) -> bool:
    """Whether ``reader`` reads only Parquet row groups whose batches Arrow and numpy build
    column by column (:meth:`~streamx.format.parquet.batch_rows.ParquetRows.flat_columns`)."""
    rows = parquet_rows(reader)
    return rows is not None and rows.flat_columns()
