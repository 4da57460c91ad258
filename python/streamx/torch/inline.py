"""Batches read in the loader's own process, when no Python runs per sample.

When a :class:`StreamingDataset` decodes every column in Rust (or, for Parquet row groups
of numbers, strings and short binary, Arrow and numpy build each batch column by column:
:meth:`~streamx.format.parquet.batch_rows.ParquetRows.flat_columns`) and nothing overrides
how it reads, a DataLoader worker does no work that needs a process of its own: it would only
decode, pickle and send what the main process could decode directly. Here the main process
reads the pass's batches itself, in the order the DataLoader's workers would have given
them (``num_workers`` still shapes that order, exactly as in mosaicml-streaming), and
collates each batch as torch's ``default_collate`` does, with one ``np.stack`` per column;
when every column has a fixed width or is ``bytes`` or ``str``, Rust reads each batch
column by column instead, straight into one array (or list) per column
(:mod:`~streamx.format.readers.batch_columns`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

from streamx.dataset.iteration import loader_batches
from streamx.dataset.streaming import StreamingDataset
from streamx.format.readers.batch_columns import Columns
from streamx.torch.batched import collate_batch, collate_columns

__all__ = ["can_read_inline", "inline_batches"]


def can_read_inline(dataset: StreamingDataset) -> bool:
    """Whether samples are decoded by Rust (and numpy, for ``ndarray`` columns) alone, with
    no subclass override to honour."""
    return dataset.decodes_without_python


def inline_batches(
    dataset: StreamingDataset, *, num_workers: int, batch_size: int, drop_last: bool
) -> Iterator[Any]:
    """Yields the collated batches of the dataset's next pass (claims its epoch)."""
    claimed = dataset.claim_pass()
    access = claimed.access
    walk = functools.partial(
        loader_batches,
        claimed.start,
        claimed.layout,
        claimed.world,
        access,
        num_workers=num_workers,
        batch_size=batch_size,
        drop_last=drop_last,
        release=claimed.release,
    )
    get_columns = access.get_columns
    if get_columns is not None:  # read column by column: no sample objects
        for pieces in walk(get_columns):
            columns = pieces[0] if len(pieces) == 1 else _joined(pieces)
            yield collate_columns(columns)
        return
    get_many = access.get_many
    assert get_many is not None
    for parts in walk(get_many):
        yield collate_batch([sample for part in parts for sample in part])


def _joined(pieces: list[Columns]) -> Columns:
    joined: Columns = {}
    for name, first in pieces[0].items():
        if isinstance(first, np.ndarray):
            joined[name] = np.concatenate([piece[name] for piece in pieces])
        else:
            joined[name] = [value for piece in pieces for value in piece[name]]
    return joined
