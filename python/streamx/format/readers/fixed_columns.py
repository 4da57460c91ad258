"""Columns whose every value has one dtype and one shape, read a batch at a time.

``int`` and the numpy scalar encodings (``uint8`` ... ``float64``), and ``ndarray`` columns
whose encoding fixes both dtype and shape (``ndarray:uint32:2048``), store each value as
exactly its array's bytes. A batch of such samples is then one copy per field, from the
shard's map into a row of one array per column (``_core.MDSReader.gather``), instead of a
dict, a bytes object and an array per sample and then a stack. The arrays equal what
``np.stack`` (or ``np.array``) of the decoded values gives, dtype and shape included, so
torch's ``default_collate`` of the samples and ``torch.from_numpy`` of these agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamx import _core
from streamx.format.columns import ColumnPlan
from streamx.format.ndarray import NDArray

__all__ = ["FixedColumn", "FixedLayout", "fixed_layout", "gather", "stack_samples"]

# The numpy scalar encodings; not uint64: torch's default_collate refuses its scalars.
_SCALARS = frozenset(name for name, _ in _core.ndarray_dtype_codes()) - {"uint64"}


@dataclass(frozen=True)
class FixedColumn:
    """One column: its name, position among the schema's sorted columns, dtype and the
    shape of one value (``()`` for scalars)."""

    name: str
    position: int
    dtype: np.dtype[Any]
    shape: tuple[int, ...]

    @property
    def width(self) -> int:
        """Bytes of one value."""
        return self.dtype.itemsize * int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class FixedLayout:
    """Every column of the dataset's one schema, all of fixed width."""

    columns: tuple[FixedColumn, ...]


def fixed_layout(plans: Sequence[ColumnPlan]) -> FixedLayout | None:
    """The layout when every shard has one schema whose columns are all of fixed width."""
    if not plans or len({(plan.names, plan.encodings) for plan in plans}) != 1:
        return None
    plan = plans[0]
    coders = dict(plan.python_columns)
    columns = []
    for position, (name, encoding, kind) in enumerate(
        zip(plan.names, plan.encodings, plan.kinds, strict=True)
    ):
        column = _fixed(name, position, encoding, kind, coders.get(name))
        if column is None:
            return None
        columns.append(column)
    return FixedLayout(tuple(columns)) if columns else None


def _fixed(name: str, position: int, encoding: str, kind: str, coder: Any) -> FixedColumn | None:
    if kind == "int":  # decoded as Python ints, which default_collate makes int64
        return FixedColumn(name, position, np.dtype(np.int64), ())
    if kind in _SCALARS:
        return FixedColumn(name, position, np.dtype(encoding), ())
    if type(coder) is NDArray and coder.dtype is not None and coder.shape is not None:
        return FixedColumn(name, position, np.dtype(coder.dtype), coder.shape)
    return None


def gather(
    core: _core.MDSReader, layout: FixedLayout, ids: list[int]
) -> dict[str, np.ndarray[Any, Any]]:
    """One array per column with the values of samples ``ids``, in order.

    Raises:
        FileNotFoundError: A shard of ``ids`` is not on disk.
        CorruptShardError: A field is not as wide as its column.
    """
    arrays = {c.name: np.empty((len(ids), *c.shape), c.dtype) for c in layout.columns}
    if ids:
        rows = [arrays[c.name].reshape(len(ids), -1).view(np.uint8) for c in layout.columns]
        core.gather(ids, [c.position for c in layout.columns], rows)
    return arrays


def stack_samples(
    layout: FixedLayout, samples: Sequence[dict[str, Any]]
) -> dict[str, np.ndarray[Any, Any]]:
    """The arrays :func:`gather` gives, built from decoded samples."""
    return {
        c.name: np.array([s[c.name] for s in samples], c.dtype).reshape(len(samples), *c.shape)
        for c in layout.columns
    }
