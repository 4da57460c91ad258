"""Integers too large for int64 in text inputs, which pyarrow's inference reads as float64.

One such value would turn the whole column into rounded floats without a word. In JSONL the
rows are parsed again as Python ints, so such a column is widened to ``str_int`` (any size,
exact); in CSV pyarrow hands over floats already, so the conversion stops, naming the column,
the row and the value.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.types as pat

from streamx.convert.errors import ConvertError

__all__ = ["check_csv_ints", "jsonl_wide_ints"]

_INT64 = range(-(2**63), 2**63)


def _float_columns(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if pat.is_floating(f.type)]


def jsonl_wide_ints(schema: pa.Schema, lines: Iterable[bytes]) -> dict[str, str]:
    """Column -> ``"str_int"`` for each float column whose values in ``lines`` are all JSON
    integers, one of them beyond int64 (the reason pyarrow chose float64)."""
    candidates = dict.fromkeys(_float_columns(schema), False)
    for line in lines:
        if not candidates or not line.strip():
            continue
        row = json.loads(line)
        for name in list(candidates):
            value = row.get(name) if isinstance(row, dict) else None
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                del candidates[name]  # a real float (or other) value: float64 is right
            elif value not in _INT64:
                candidates[name] = True
    return {name: "str_int" for name, wide in candidates.items() if wide}


def check_csv_ints(name: str, schema: pa.Schema, head: bytes) -> None:
    """Raises :class:`ConvertError` when a float column of the CSV file ``name`` holds an
    integer beyond int64 in ``head`` (its first rows)."""
    floats = set(_float_columns(schema))
    if not floats:
        return
    reader = csv.DictReader(io.StringIO(head.decode("utf-8", errors="replace")))
    for row_number, row in enumerate(reader):
        for column in floats:
            text = (row.get(column) or "").strip()
            if text.lstrip("+-").isdigit() and int(text) not in _INT64:
                raise ConvertError(
                    f"{name}, row {row_number}: column {column!r} holds the integer {text}, "
                    "beyond int64; CSV inference reads the column as float64, which would "
                    "round it. Convert the file to JSONL (integers of any size are kept "
                    "exactly there) or store the column as text in the CSV's source."
                )
