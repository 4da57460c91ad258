"""What every input kind gives the converter: columns, a deterministic list of parts, rows.

A part is the unit of work, of resume and of output: each is written by one process into its
own sub-directory, so the parts' order and contents (and therefore the shards) depend only on
the input and the settings, never on the number of workers or on timing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "MIN_PART_BYTES",
    "PARTS_TARGET",
    "Part",
    "Row",
    "Source",
    "chunk_ranges",
    "with_overrides",
]

#: Parts a splittable input (image folder, HF dataset, function inputs) is cut into, whatever
#: the number of workers, so the output does not depend on it.
PARTS_TARGET = 64

#: The least input a part of a sized input (an image folder) gets, so that a small input is
#: not cut into 64 parts whose fixed costs (a writer, a directory, an index to merge) exceed
#: their work. Input bytes, not the number of workers, decide it: the same input and
#: settings still give the same parts, and so the same shards, on any machine.
MIN_PART_BYTES = 16 << 20


@dataclass(frozen=True)
class Part:
    """One unit of work: ``label`` names it in errors; ``spec`` is the source's own address
    (file, row group, row range...)."""

    index: int
    label: str
    spec: tuple[Any, ...]


#: A row as read: the file it came from, its 0-based number there, and the sample.
Row = tuple[str, int, dict[str, Any]]


class Source(Protocol):
    """An input the converter can split and read; instances pickle into worker processes."""

    def describe(self) -> Mapping[str, Any]:
        """JSON-able identity of the input, recorded to refuse resuming a different one."""

    def columns(self, overrides: Mapping[str, str]) -> dict[str, str]:
        """Column name -> MDS encoding: the user's ``overrides`` for the columns they name
        (applied before inference, so they reach a column inference would reject), the
        inferred encoding for the rest."""

    def parts(self) -> list[Part]:
        """The parts, in output order."""

    def rows(self, part: Part, columns: Mapping[str, str]) -> Iterator[Row]:
        """The part's rows, in order, as samples for ``columns`` (after overrides)."""


def with_overrides(inferred: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
    """``inferred`` with ``overrides`` in place of the encodings they name.

    Raises:
        ValueError: An override names a column the input lacks.
    """
    unknown = sorted(set(overrides) - set(inferred))
    if unknown:
        raise ValueError(
            f"Overrides name columns {unknown} that the input lacks; it has {list(inferred)}."
        )
    return {name: overrides.get(name, encoding) for name, encoding in inferred.items()}


def chunk_ranges(
    total: int, per_part: int | None, total_bytes: int | None = None
) -> list[tuple[int, int]]:
    """``[start, end)`` ranges over ``total`` items, ``per_part`` each.

    By default there are about :data:`PARTS_TARGET` parts, or, when the input's size
    ``total_bytes`` is known, fewer: one per :data:`MIN_PART_BYTES` of input, at least one.

    Examples:
        >>> chunk_ranges(10, 4)
        [(0, 4), (4, 8), (8, 10)]
        >>> chunk_ranges(1000, None, total_bytes=40 << 20)  # 40 MiB: 3 parts, not 64
        [(0, 334), (334, 668), (668, 1000)]
    """
    parts = PARTS_TARGET
    if total_bytes is not None:
        parts = min(PARTS_TARGET, max(1, math.ceil(total_bytes / MIN_PART_BYTES)))
    size = per_part or max(1, math.ceil(total / parts))
    return [(start, min(start + size, total)) for start in range(0, total, size)]
