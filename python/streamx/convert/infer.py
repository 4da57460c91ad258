"""MDS columns from an Arrow schema: the one table every converter (one machine, Ray, Dask) reads.

Each Arrow type maps to the encoding that stores it without loss and decodes to the closest
Python/numpy value: integers and floats to the same-width numpy scalar, strings to ``str``,
binaries to ``bytes``, decimals to ``str_decimal``, and numeric lists to ``ndarray`` (with a
static shape when every level is a fixed-size list, so the shape costs no bytes per sample).
Anything else (timestamps, structs, maps, nulls) has no obvious encoding: the caller names one
in ``overrides`` rather than have streamx guess.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.types as pat

from streamx.format.encodings import is_mds_encoding
from streamx.format.ndarray import DTYPE_CODES

__all__ = ["infer_columns", "no_encoding_advice"]


def infer_columns(schema: pa.Schema, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Maps each field of an Arrow schema to an MDS encoding, in the schema's order.

    Args:
        schema: The Arrow schema of the rows to write (``pyarrow.Table.schema``,
            ``pyarrow.dataset.Dataset.schema``, ...).
        overrides: Column name -> MDS encoding (``"jpeg"``, ``"pkl"``, ``"int"``...), used
            instead of the inferred one. Needed for the types no encoding maps to.

    Returns:
        Column name -> encoding, ready for ``MDSWriter(columns=...)``.

    Raises:
        TypeError: A column's Arrow type has no inferred encoding and no override; the
            message names the column and its type.
        ValueError: An override names a column the schema lacks, or an unknown encoding; or
            the schema repeats a column name.

    Examples:
        >>> import pyarrow as pa
        >>> schema = pa.schema([("text", pa.string()), ("id", pa.int64()),
        ...                     ("emb", pa.list_(pa.float32(), 4)), ("img", pa.binary())])
        >>> infer_columns(schema, {"img": "jpeg"})
        {'text': 'str', 'id': 'int64', 'emb': 'ndarray:float32:4', 'img': 'jpeg'}
    """
    overrides = dict(overrides or {})
    names = list(schema.names)
    if len(set(names)) != len(names):
        dupes = sorted({name for name in names if names.count(name) > 1})
        raise ValueError(f"The schema repeats column names {dupes}; MDS columns must be unique.")
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ValueError(f"Overrides name columns {unknown} that the input lacks; it has {names}.")
    for name, wanted in overrides.items():
        if not is_mds_encoding(wanted):
            raise ValueError(f"Override for column {name!r}: unknown MDS encoding {wanted!r}.")
    columns: dict[str, str] = {}
    for field in schema:
        encoding: str | None = overrides.get(field.name) or _infer(field.type)
        if encoding is None:
            raise TypeError(no_encoding_advice(field.name, field.type))
        columns[field.name] = encoding
    return columns


def no_encoding_advice(name: str, dtype: pa.DataType) -> str:
    """The error for a column no encoding is inferred for: how to name one, in the CLI and
    in Python (the override is applied before inference, so it reaches this column).

    Examples:
        >>> print(no_encoding_advice("tags", pa.list_(pa.string())))
        Column 'tags' has Arrow type list<item: string>, which no MDS encoding is inferred for; \
name one: `-c tags=json` with streamx convert, or overrides={'tags': 'json'} in Python \
('json' stores lists and dicts of plain values, 'pkl' any Python value).
    """
    return (
        f"Column {name!r} has Arrow type {dtype}, which no MDS encoding is inferred for; "
        f"name one: `-c {name}=json` with streamx convert, or overrides={{{name!r}: 'json'}} "
        "in Python ('json' stores lists and dicts of plain values, 'pkl' any Python value)."
    )


def _infer(dtype: pa.DataType) -> str | None:
    """The encoding of one Arrow type, or ``None`` when there is no lossless obvious one."""
    if pat.is_dictionary(dtype):
        return _infer(dtype.value_type)
    if pat.is_string(dtype) or pat.is_large_string(dtype) or pat.is_string_view(dtype):
        return "str"
    if pat.is_binary(dtype) or pat.is_large_binary(dtype) or pat.is_binary_view(dtype):
        return "bytes"
    if pat.is_fixed_size_binary(dtype):
        return "bytes"
    if pat.is_decimal(dtype):
        return "str_decimal"
    if pat.is_boolean(dtype):
        return "uint8"  # No bool dtype in MDS: stored as 0/1.
    scalar = _numeric(dtype)
    if scalar is not None:
        return scalar
    return _ndarray(dtype)


def _numeric(dtype: pa.DataType) -> str | None:
    """The fixed-width numpy scalar encoding of an integer or float type."""
    if not (pat.is_integer(dtype) or pat.is_floating(dtype)):
        return None
    name = dtype.to_pandas_dtype().__name__
    return name if name in DTYPE_CODES else None


def _ndarray(dtype: pa.DataType) -> str | None:
    """``ndarray:dtype[:shape]`` for (nested) lists of numbers; the shape only if all fixed."""
    shape: list[int] = []
    fixed = True
    while pat.is_list(dtype) or pat.is_large_list(dtype) or pat.is_fixed_size_list(dtype):
        if pat.is_fixed_size_list(dtype) and dtype.list_size > 0:
            shape.append(dtype.list_size)
        else:
            fixed = False
        dtype = dtype.value_type
    if not shape and fixed:
        return None  # Not a list at all.
    element = _numeric(dtype)
    if element is None:
        return None
    return f"ndarray:{element}:{','.join(map(str, shape))}" if fixed else f"ndarray:{element}"
