"""How a pass reads a dataset's samples: a :class:`SampleAccess` over its reader.

Chunks of ids are decoded in one call into Rust, through range reads while their shards
still download; when the schema allows, whole batches come column by column
(:mod:`~streamx.format.readers.batch_columns`; for Parquet row groups, LitData chunks and
WebDataset tars, the reader's :class:`~streamx.format.batch_parts.BatchReader`). A subclass
that overrides ``__getitem__`` or ``get_item`` gets neither: every id then goes through
``ds[i]``, as in mosaicml-streaming.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.cache.range_reads import RangeReads
from streamx.dataset.iteration import SampleAccess
from streamx.format.readers import mds_reader, parquet_rows
from streamx.format.readers.base import SampleReader
from streamx.format.readers.batch_columns import Columns, stack_samples
from streamx.format.readers.mixed import MixedSampleReader

__all__ = ["reader_access"]


def reader_access(
    reader: SampleReader,
    ranges: RangeReads | None,
    *,
    get_one: Callable[[int], Any],
    get_item: Callable[[int], Any],
    prepare: Callable[[NDArray[np.int64], int, int], int],
    settle: Callable[[], None],
    chunk: int,
    overridden: bool,
) -> SampleAccess:
    """The access of a dataset whose samples ``reader`` decodes; ``get_item`` serves a
    sample whose shard is not local (it downloads), ``get_one`` is ``ds[i]``."""
    if overridden:
        return SampleAccess(
            get_one=get_one, get_many=None, prepare=prepare, chunk=chunk, settle=settle
        )

    def get_many(ids: list[int]) -> list[Any]:
        if ranges is not None:
            return ranges.get_many(reader, ids, get_item)
        return reader.get_many(ids, get_item)

    get_columns = None
    mds = mds_reader(reader)
    layout = mds.batch_layout if mds is not None else None
    if mds is not None and layout is not None:
        read_columns = mds.get_columns

        def get_columns(ids: list[int]) -> Columns:
            columns = read_columns(ids)
            if columns is None:  # a shard not (wholly) here yet: the miss handler's way
                return stack_samples(layout, get_many(ids))
            return columns

    parquet = parquet_rows(reader)
    expect = parquet.expect if parquet is not None else None
    # The per-sample path reads a Parquet-only dataset's rows through the reader itself.
    expect_samples = (
        reader.expect if parquet is not None and isinstance(reader, MixedSampleReader) else None
    )
    rows = reader.batch_reader if isinstance(reader, MixedSampleReader) else None
    if rows is not None:
        read_rows = rows.get_columns

        def get_columns(ids: list[int]) -> Columns:
            columns = read_rows(ids)
            if columns is None:  # a shard not here yet: the miss handler's way fetches it
                samples = get_many(ids)
                # Read again by column now that the shards are here, so that the pieces of a
                # batch agree (one by column, one as values would stack unlike the rest).
                columns = read_rows(ids)
                if columns is None:  # evicted again meanwhile
                    return {name: [s[name] for s in samples] for name in samples[0]}
            return columns

    return SampleAccess(
        get_one=get_one,
        get_many=get_many,
        prepare=prepare,
        chunk=chunk,
        get_columns=get_columns,
        expect=expect,
        expect_samples=expect_samples,
        settle=settle,
    )
