"""One claimed pass over a :class:`~streamx.StreamingDataset`, frozen.

``iter(dataset)`` walks a pass in a DataLoader worker; :mod:`streamx.torch` may walk the
same pass in the loader's own process (:mod:`streamx.torch.inline`). Both start from this
value, which the dataset makes once per pass, so the loader reads nothing private of the
dataset and both walks see the same epoch, layout, grouping and sample access.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from streamx.dataset.iteration import SampleAccess
from streamx.dataset.layout import DatasetLayout
from streamx.format.ndarray import NDArray
from streamx.format.readers import SampleReader, mds_reader, reads_flat_parquet
from streamx.order.epoch_state import EpochStart
from streamx.order.world import World

__all__ = ["PassView", "decodes_without_python"]


@dataclass(frozen=True)
class PassView:
    """A pass this worker has claimed, and everything a loader walks it with."""

    start: EpochStart  # the epoch, where it resumes, and its resolved settings
    layout: DatasetLayout
    world: World  # this worker among the ranks that read distinct samples, read once
    access: SampleAccess
    release: Callable[[int], None]  # drops a shard's map once the pass is past it


def decodes_without_python(reader: SampleReader, hooks_overridden: bool) -> bool:
    """Whether samples decode in Rust (and numpy, for ``ndarray`` columns) alone, with no
    subclass hook of the dataset's to honour: MDS with no column decoded by Python code, or
    Parquet row groups whose batches Arrow and numpy build column by column."""
    if hooks_overridden:
        return False
    mds = mds_reader(reader)
    if mds is not None:
        return all(isinstance(coder, NDArray) for _, coder in mds.python_columns())
    return reads_flat_parquet(reader)
