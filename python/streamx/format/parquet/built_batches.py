"""Batches of a pass in order, several cut from a row group in one call.

A pass in order (no shuffle) reads a row group's rows as consecutive batches. Cut one at a
time, each batch pays for the run checks, the decoded cache's lookup and a slice per column
(a few µs each), on the loader's own thread, which bounds the batched loader. Once a batch
continues the run of the batch before it, the next :data:`BATCHES` batches of that row group
(:data:`ROWS` rows at most) are cut in one call (one copy per number column, one
``to_pylist`` per string column) and split: each batch's arrays are views of that copy
(writable, their own rows only), its strings a slice of the list. They are handed out
while the pass asks for exactly their ids, in order; any other request drops them. Their
rows are marked read as each is handed out, as a batch cut on its own would be, so a pass
stopped in the middle keeps its row group.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamx.format.parquet.decoded_row_group import DecodedRowGroup

__all__ = ["BATCHES", "ROWS", "Built", "BuiltBatches", "ahead", "split"]

# Batches cut in one call, and rows at most (large batches gain little from it, and their
# strings would be held ahead): 16 batches of 32 rows copy 4 KiB per number column.
BATCHES = 16
ROWS = 512

# Where a built batch's rows come from: its row group's index, decoded table and cache key,
# the row group's row count, and the batch's first row in it.
Built = tuple[int, DecodedRowGroup, str, int, int]


class BuiltBatches:
    """The batches cut ahead and not handed out yet, the next one last."""

    def __init__(self) -> None:
        self._ids: list[list[int]] = []
        self._batches: list[tuple[dict[str, Any], Built]] = []
        self.next_id = -1  # the id after the last batch of a run cut (handed out or kept)

    def __reduce__(self) -> tuple[type[BuiltBatches], tuple[()]]:
        return (BuiltBatches, ())  # a fresh one where it is unpickled: no batches travel

    def take(self, ids: list[int]) -> tuple[dict[str, Any], Built] | None:
        """The batch built for exactly ``ids``, if it is the next one; else drops all."""
        expected = self._ids
        if expected and ids == expected[-1]:
            expected.pop()
            return self._batches.pop()
        if expected:
            self.clear()
        return None

    def keep(self, first_id: int, count: int, batches: list[dict[str, Any]], at: Built) -> None:
        """Keeps ``batches`` (of ``count`` rows each, the first starting at dataset id
        ``first_id`` and at ``at``'s row) to hand out in order."""
        shard, group, key, rows, first = at
        starts = range(first_id, first_id + count * len(batches), count)
        self._ids = [list(range(start, start + count)) for start in reversed(starts)]
        self._batches = [
            (batch, (shard, group, key, rows, first + number * count))
            for number, batch in reversed(list(enumerate(batches)))
        ]

    def clear(self) -> None:
        self._ids, self._batches = [], []


def ahead(count: int, left: int) -> int:
    """How many batches of ``count`` rows to cut in one call, ``left`` rows left in the row
    group from the first: at least the one asked for."""
    return max(1, min(BATCHES, ROWS // count, left // count))


def split(columns: dict[str, Any], count: int, batches: int) -> list[dict[str, Any]]:
    """The columns of ``batches * count`` rows as ``batches`` batches of ``count`` rows: an
    array's rows as views of it, a list's as slices."""
    names = list(columns)
    parts = []
    for value in columns.values():
        if isinstance(value, np.ndarray):
            parts.append(list(value.reshape(batches, count, *value.shape[1:])))
        else:
            parts.append([value[at : at + count] for at in range(0, batches * count, count)])
    return [dict(zip(names, row, strict=True)) for row in zip(*parts, strict=True)]
