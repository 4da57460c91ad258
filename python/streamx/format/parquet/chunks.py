"""Where a row group's column chunks lie in its file, checked to lie inside its data, and
the ranged GETs that fetch them."""

from __future__ import annotations

from typing import Any

from streamx.exceptions import CorruptShardError
from streamx.format.remote_files import RemoteFile

__all__ = ["GAP_BYTES", "column_chunks", "ranged_parts"]

# Unread bytes between two chunks that one GET may still span: a request costs more than a
# few KiB (Arrow's pre-buffering uses the same bound for the holes it reads through).
GAP_BYTES = 8 << 10


def column_chunks(md: Any, number: int, wanted: set[str], file: RemoteFile) -> list[list[int]]:
    """``[offset, length]`` of the chunks of the ``wanted`` columns of row group ``number``
    (as the file's metadata ``md`` gives them), sorted, adjacent ones merged.

    Raises:
        CorruptShardError: Naming the file, row group and column, if a chunk lies outside
            the file's data (between its leading magic and its footer).
    """
    data_end = file.size - md.serialized_size - 8
    rg = md.row_group(number)
    chunks: list[list[int]] = []
    for j in range(rg.num_columns):
        col = rg.column(j)
        if col.path_in_schema.split(".")[0] not in wanted:
            continue
        pages = [int(col.data_page_offset)]
        if col.has_dictionary_page and col.dictionary_page_offset:  # 0: none, some writers
            pages.append(int(col.dictionary_page_offset))
        start, length = min(pages), int(col.total_compressed_size)
        # Each chunk on its own: once merged, a negative length could hide in its neighbour.
        if start < 4 or length < 0 or max(pages) > start + length or start + length > data_end:
            raise CorruptShardError(
                f"{file.url} row group {number}: column {col.path_in_schema!r}: the footer "
                f"puts its chunk at [{start}, {start + length}) and its pages at {pages}, "
                f"not all inside the file's data [4, {data_end})"
            )
        chunks.append([start, length])
    chunks.sort()
    merged: list[list[int]] = []
    for start, length in chunks:
        if merged and merged[-1][0] + merged[-1][1] == start:
            merged[-1][1] += length
        else:
            merged.append([start, length])
    return merged


def ranged_parts(chunks: list[tuple[int, int]], part: int) -> list[tuple[int, int]]:
    """``(start, length)`` of the ranged GETs that fetch ``chunks`` (sorted, apart), each at
    most ``part`` bytes: a chunk larger than ``part`` is split, small chunks share one GET
    where no more than :data:`GAP_BYTES` of unread bytes lie between them.

    Examples:
        >>> ranged_parts([(0, 10), (12, 5), (100, 30)], 20)
        [(0, 17), (100, 20), (120, 10)]
    """
    spans: list[list[int]] = []
    for start, length in chunks:
        last = spans[-1] if spans else None
        near = last is not None and start - (last[0] + last[1]) <= GAP_BYTES
        if last is not None and near and start + length - last[0] <= part:
            last[1] = start + length - last[0]
            continue
        spans.append([start, length])
    return [
        (at, min(part, start + length - at))
        for start, length in spans
        for at in range(start, start + length, part)
    ]
