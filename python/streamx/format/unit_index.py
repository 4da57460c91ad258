"""The units of a source read in place (Parquet row groups, tars) in the shape of
``streamx._core.ShardIndex``, so ``ShardList`` reads them as it reads an MDS index."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["Unit", "UnitIndex"]


class Unit(Protocol):
    """One unit: its samples, the bytes it downloads, and its cached file's name."""

    @property
    def rows(self) -> int: ...

    @property
    def nbytes(self) -> int: ...

    @property
    def basename(self) -> str: ...


U = TypeVar("U", bound=Unit)


class UnitIndex(Generic[U]):
    """Units of one format; a subclass says what each unit's entry carries (``extra``)."""

    format = ""

    def __init__(self, units: Sequence[U]) -> None:
        self.units = tuple(units)

    def __len__(self) -> int:
        return len(self.units)

    def samples(self) -> NDArray[np.int64]:
        return np.array([u.rows for u in self.units], np.int64)

    def max_sizes(self) -> NDArray[np.int64]:
        return np.array([u.nbytes for u in self.units], np.int64)

    def raw_sizes(self) -> NDArray[np.int64]:
        return self.max_sizes()

    def schema_ids(self) -> NDArray[np.int64]:
        return np.zeros(len(self.units), np.int64)

    def schemas(self) -> list[tuple[list[str], list[str], list[int | None]] | None]:
        return [None]

    def formats(self) -> list[str]:
        return [self.format]

    def extra(self, unit: U) -> dict[str, Any]:
        """What a reader of ``unit`` needs beyond its file (the entry's JSON ``extra``)."""
        raise NotImplementedError

    def entry(self, shard: int) -> tuple[Any, ...]:
        unit = self.units[shard]
        raw: tuple[str, int, list[tuple[str, str]]] = (unit.basename, unit.nbytes, [])
        extra = json.dumps(self.extra(unit))
        return (self.format, None, [], unit.rows, None, raw, None, None, None, 0, extra)
