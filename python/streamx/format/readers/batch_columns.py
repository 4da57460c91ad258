"""A batch of samples read column by column, with no object per sample.

``int`` and the numpy scalar encodings (``uint8`` ... ``float64``), and ``ndarray`` columns
whose encoding fixes both dtype and shape (``ndarray:uint32:2048``), store each value as
exactly its array's bytes. A batch of such values is one copy per field, from the shard's
map into a row of one array per column, instead of a dict, a bytes object and an array per
sample and then a stack. ``bytes`` and ``str`` columns come as one list of values each,
which is what torch's ``default_collate`` makes of them. Both happen in one pass through
``_core.MDSReader.gather``. The arrays equal what ``np.stack`` (or ``np.array``) of the
decoded values gives, dtype and shape included, so ``default_collate`` of the samples and
``torch.from_numpy`` of these agree.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamx import _core
from streamx.format.batch_parts import Columns
from streamx.format.columns import ColumnPlan
from streamx.format.ndarray import NDArray

__all__ = [
    "BatchLayout",
    "Columns",
    "FixedColumn",
    "ListedColumn",
    "batch_layout",
    "gather",
    "stack_samples",
]

# The numpy scalar encodings; not uint64: torch's default_collate refuses its scalars.
_SCALARS = frozenset(name for name, _ in _core.ndarray_dtype_codes()) - {"uint64"}
# Columns default_collate leaves as the list of their values.
_LISTED = frozenset(["bytes", "str"])


@dataclass(frozen=True)
class FixedColumn:
    """A column of fixed width: its name, position among the schema's sorted columns, dtype
    and the shape of one value (``()`` for scalars)."""

    name: str
    position: int
    dtype: np.dtype[Any]
    shape: tuple[int, ...]

    @property
    def width(self) -> int:
        """Bytes of one value."""
        return self.dtype.itemsize * int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class ListedColumn:
    """A ``bytes`` or ``str`` column, batched as the list of its values."""

    name: str
    position: int


@dataclass(frozen=True)
class BatchLayout:
    """Every column of the dataset's one schema, in its order."""

    columns: tuple[FixedColumn | ListedColumn, ...]

    # Derived once, read for every batch.
    @functools.cached_property
    def fixed(self) -> list[FixedColumn]:
        return [c for c in self.columns if isinstance(c, FixedColumn)]

    @functools.cached_property
    def listed(self) -> list[ListedColumn]:
        return [c for c in self.columns if isinstance(c, ListedColumn)]


def batch_layout(plans: Sequence[ColumnPlan]) -> BatchLayout | None:
    """The layout when every shard has one schema whose columns are all of fixed width,
    ``bytes`` or ``str``, with at least one of fixed width (else nothing is gained)."""
    if not plans or len({(plan.names, plan.encodings) for plan in plans}) != 1:
        return None
    plan = plans[0]
    coders = dict(plan.python_columns)
    columns: list[FixedColumn | ListedColumn] = []
    for position, (name, encoding, kind) in enumerate(
        zip(plan.names, plan.encodings, plan.kinds, strict=True)
    ):
        column = _column(name, position, encoding, kind, coders.get(name))
        if column is None:
            return None
        columns.append(column)
    layout = BatchLayout(tuple(columns))
    return layout if layout.fixed else None


def _column(
    name: str, position: int, encoding: str, kind: str, coder: Any
) -> FixedColumn | ListedColumn | None:
    if kind == "int":  # decoded as Python ints, which default_collate makes int64
        return FixedColumn(name, position, np.dtype(np.int64), ())
    if kind in _SCALARS:
        return FixedColumn(name, position, np.dtype(encoding), ())
    if kind in _LISTED:
        return ListedColumn(name, position)
    if type(coder) is NDArray and coder.dtype is not None and coder.shape is not None:
        return FixedColumn(name, position, np.dtype(coder.dtype), coder.shape)
    return None


def gather(core: _core.MDSReader, layout: BatchLayout, ids: list[int]) -> Columns | None:
    """Samples ``ids``, in order, as one array or list per column; ``None`` while a shard of
    ``ids`` is not on local disk.

    Raises:
        CorruptShardError: A field is not as wide as its column, or does not decode.
    """
    fixed, listed = layout.fixed, layout.listed
    arrays = {c.name: np.empty((len(ids), *c.shape), c.dtype) for c in fixed}
    lists: list[list[Any]] = [[] for _ in listed]
    if ids:
        rows = [arrays[c.name].reshape(len(ids), -1).view(np.uint8) for c in fixed]
        gathered = core.gather_if_local(
            ids, [c.position for c in fixed], rows, [c.position for c in listed]
        )
        if gathered is None:
            return None
        lists = gathered
    values = dict(zip((c.name for c in listed), lists, strict=True))
    return {c.name: arrays[c.name] if c.name in arrays else values[c.name] for c in layout.columns}


def stack_samples(layout: BatchLayout, samples: Sequence[dict[str, Any]]) -> Columns:
    """What :func:`gather` gives, built from decoded samples."""
    n = len(samples)
    return {
        c.name: (
            np.array([s[c.name] for s in samples], c.dtype).reshape(n, *c.shape)
            if isinstance(c, FixedColumn)
            else [s[c.name] for s in samples]
        )
        for c in layout.columns
    }
