"""Where a row group's column chunks lie in its file."""

from __future__ import annotations

from typing import Any

__all__ = ["column_chunks"]


def column_chunks(md: Any, number: int, wanted: set[str]) -> list[list[int]]:
    """``[offset, length]`` of the chunks of the ``wanted`` columns of row group ``number``
    (as the file's metadata ``md`` gives them), sorted, adjacent ones merged."""
    rg = md.row_group(number)
    chunks: list[list[int]] = []
    for j in range(rg.num_columns):
        col = rg.column(j)
        if col.path_in_schema.split(".")[0] not in wanted:
            continue
        start = col.data_page_offset
        if col.has_dictionary_page and col.dictionary_page_offset:
            start = min(start, col.dictionary_page_offset)
        chunks.append([int(start), int(col.total_compressed_size)])
    chunks.sort()
    merged: list[list[int]] = []
    for start, length in chunks:
        if merged and merged[-1][0] + merged[-1][1] == start:
            merged[-1][1] += length
        else:
            merged.append([start, length])
    return merged
