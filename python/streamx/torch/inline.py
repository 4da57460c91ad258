"""Batches read in the loader's own process, when no Python runs per sample.

When a :class:`StreamingDataset` decodes every column in Rust and nothing overrides how it
reads, a DataLoader worker does no work that needs a process of its own: it would only
decode, pickle and send what the main process could decode directly. Here the main process
reads the pass's batches itself, in the order the DataLoader's workers would have given
them (``num_workers`` still shapes that order, exactly as in mosaicml-streaming), and
collates each batch as torch's ``default_collate`` does, with one ``np.stack`` per column;
when every column is of fixed width, each batch is copied by Rust straight into one array
per column instead (:mod:`~streamx.format.readers.fixed_columns`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from streamx.dataset.iteration import loader_batches, loader_column_batches
from streamx.dataset.streaming import StreamingDataset
from streamx.format.ndarray import NDArray
from streamx.format.readers.mds import MDSSampleReader
from streamx.torch.batched import pack_batch, unpack_batch

__all__ = ["can_read_inline", "inline_batches"]


def can_read_inline(dataset: StreamingDataset) -> bool:
    """Whether samples are decoded by Rust (and numpy, for ``ndarray`` columns) alone, with
    no subclass override to honour."""
    cls = type(dataset)
    reader = dataset._reader
    return (
        cls.__iter__ is StreamingDataset.__iter__
        and cls.__getitem__ is StreamingDataset.__getitem__
        and cls.get_item is StreamingDataset.get_item
        and isinstance(reader, MDSSampleReader)
        and all(
            isinstance(coder, NDArray) for plan in reader._plans for _, coder in plan.python_columns
        )
    )


def inline_batches(
    dataset: StreamingDataset, *, num_workers: int, batch_size: int, drop_last: bool
) -> Iterator[Any]:
    """Yields the collated batches of the dataset's next pass (claims its epoch)."""
    start = dataset._state.start_epoch(dataset._settings, dataset._parallel_rank_world.num_nodes)
    dataset._settings = start.settings
    access = dataset._sample_access()
    plan = (start, dataset._layout, dataset.replication, access)
    release = dataset._reader.evict
    if access.get_columns is not None:  # every column of fixed width: no sample objects
        for columns in loader_column_batches(
            *plan,
            num_workers=num_workers,
            batch_size=batch_size,
            drop_last=drop_last,
            release=release,
        ):
            yield {name: torch.from_numpy(array) for name, array in columns.items()}
        return
    for samples in loader_batches(
        *plan, num_workers=num_workers, batch_size=batch_size, drop_last=drop_last, release=release
    ):
        yield unpack_batch(pack_batch(samples))
