"""Rows read by a pass in order, marked read once per run of batches, not once per batch.

A decoded row group counts the rows read from it so that it leaves the cache once all have
been (:func:`~streamx.format.parquet.decoded_row_group.done_reading`). Marking costs a few
numpy calls per batch; a pass in order reads a row group's batches one after the other, so
here consecutive batches of one row group extend one run, marked when the run is broken
(another row group, rows out of order) or may hold the row group's last unread row (it
reaches the last row, or is as long as the rows left unread), where the row group then
goes at once, as before. A run left open (a pass stopped inside a row group)
keeps its rows unmarked: that row group then stays until the cache's bound sends it out,
as a partly read one always did.
"""

from __future__ import annotations

import numpy as np

from streamx.format.parquet.decoded_row_group import DecodedRowGroup, done_reading

__all__ = ["RunMarks"]


class RunMarks:
    """The open run: rows ``[first, stop)`` of one decoded row group, not marked yet."""

    def __init__(self) -> None:
        self._group: DecodedRowGroup | None = None
        self._key = ""
        self._first = self._stop = 0

    def __reduce__(self) -> tuple[type[RunMarks], tuple[()]]:
        return (RunMarks, ())  # a fresh one where it is unpickled: no decoded table travels

    def add(self, key: str, group: DecodedRowGroup, first: int, stop: int, rows: int) -> None:
        """Rows ``[first, stop)`` of ``group`` (cache key ``key``, ``rows`` rows in all)
        were read."""
        if group is not self._group or first != self._stop:
            self.flush()
            self._group, self._key, self._first = group, key, first
        self._stop = stop
        # Its last row, or as many rows as were left unread: the row group may go now.
        if stop >= rows or group.left <= stop - self._first:
            self.flush()

    def flush(self) -> None:
        """Marks the open run's rows read."""
        group, self._group = self._group, None
        if group is not None:
            done_reading(self._key, group, np.arange(self._first, self._stop, dtype=np.int64))
