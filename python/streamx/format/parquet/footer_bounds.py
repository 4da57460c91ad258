"""Bounds on the row counts a Parquet footer claims, checked before they reach the planner.

A footer is input: its counts become shard sizes, sample ids and allocations. The first
two bounds reject only what streamx could never read, whatever the file holds:

* A row group is decoded whole into one table, and a row filter numbers its rows as int32,
  so a row group of more than ``2**31 - 1`` rows cannot be read (its Python values alone
  would take tens of GiB a column). Its bytes give no tighter bound: an RLE or dictionary
  page of a constant or all-null column holds up to ``2**31 - 1`` values in a few bytes.
* A file of more than ``2**40`` rows would take the planner 8 TiB of sample ids.
* The row groups' counts must add up to the file's: pyarrow reads a row group whose count
  was lowered as that many rows, silently dropping the rest, so this sum is the footer's
  one cross-check on them. It also refuses a file whose writer miscounted the total
  (fastparquet's ``append`` before 2022.12 did): such a total looks the same as a lowered
  count, and the error says to rewrite the file.
"""

from __future__ import annotations

from typing import Any

from streamx.exceptions import CorruptShardError

__all__ = ["MAX_FILE_ROWS", "MAX_GROUP_ROWS", "check_row_counts"]

MAX_GROUP_ROWS = 2**31 - 1
MAX_FILE_ROWS = 2**40


def check_row_counts(md: Any, shown: str) -> None:
    """Checks the row counts in ``md`` (a ``pyarrow.parquet.FileMetaData``).

    Raises:
        CorruptShardError: Naming ``shown`` (and the row group), if a count is negative or
            past its bound, or the row groups' counts do not add up to the file's.
    """
    total = int(md.num_rows)
    if not 0 <= total <= MAX_FILE_ROWS:
        raise CorruptShardError(
            f"{shown}: the Parquet footer claims {total} rows (0 to {MAX_FILE_ROWS} can be read)"
        )
    found = 0
    for number in range(md.num_row_groups):
        rows = int(md.row_group(number).num_rows)
        if not 0 <= rows <= MAX_GROUP_ROWS:
            raise CorruptShardError(
                f"{shown} row group {number}: the Parquet footer claims {rows} rows "
                f"(0 to {MAX_GROUP_ROWS} can be read)"
            )
        found += rows
    if found != total:
        raise CorruptShardError(
            f"{shown}: the Parquet footer's row groups hold {found} rows, its total says "
            f"{total} (a corrupt footer, or a writer that miscounted: rewrite the file)"
        )
