"""infer_columns: Arrow types to MDS encodings, checked by writing and reading real shards."""

from __future__ import annotations

import decimal
import os

import numpy as np
import pyarrow as pa
import pytest

from streamx import MDSWriter, StreamingDataset
from streamx.convert.infer import infer_columns

SCALARS = [
    (pa.int8(), "int8"),
    (pa.int16(), "int16"),
    (pa.int32(), "int32"),
    (pa.int64(), "int64"),
    (pa.uint8(), "uint8"),
    (pa.uint16(), "uint16"),
    (pa.uint32(), "uint32"),
    (pa.uint64(), "uint64"),
    (pa.float16(), "float16"),
    (pa.float32(), "float32"),
    (pa.float64(), "float64"),
    (pa.string(), "str"),
    (pa.large_string(), "str"),
    (pa.binary(), "bytes"),
    (pa.large_binary(), "bytes"),
    (pa.binary(3), "bytes"),
    (pa.decimal128(10, 3), "str_decimal"),
    (pa.bool_(), "uint8"),
    (pa.dictionary(pa.int8(), pa.string()), "str"),
]


@pytest.mark.parametrize(("arrow", "encoding"), SCALARS)
def test_scalar_types(arrow: pa.DataType, encoding: str) -> None:
    assert infer_columns(pa.schema([("x", arrow)])) == {"x": encoding}


def test_lists_become_ndarrays() -> None:
    schema = pa.schema(
        [
            ("fixed", pa.list_(pa.float32(), 4)),
            ("matrix", pa.list_(pa.list_(pa.int16(), 3), 2)),
            ("ragged", pa.list_(pa.int64())),
            ("ragged_rows", pa.large_list(pa.list_(pa.uint8(), 3))),
        ]
    )
    assert infer_columns(schema) == {
        "fixed": "ndarray:float32:4",
        "matrix": "ndarray:int16:2,3",
        "ragged": "ndarray:int64",
        "ragged_rows": "ndarray:uint8",
    }


def test_keeps_schema_order_and_applies_overrides() -> None:
    schema = pa.schema([("b", pa.binary()), ("a", pa.int64()), ("t", pa.timestamp("s"))])
    columns = infer_columns(schema, {"b": "jpeg", "t": "pkl"})
    assert list(columns.items()) == [("b", "jpeg"), ("a", "int64"), ("t", "pkl")]


@pytest.mark.parametrize(
    "arrow",
    [
        pa.timestamp("ms"),
        pa.struct([("a", pa.int8())]),
        pa.map_(pa.string(), pa.int8()),
        pa.null(),
        pa.list_(pa.string()),
        pa.list_(pa.bool_(), 2),
    ],
)
def test_unsupported_type_names_the_column(arrow: pa.DataType) -> None:
    schema = pa.schema([("ok", pa.int32()), ("odd_col", arrow)])
    with pytest.raises(TypeError, match="odd_col") as info:
        infer_columns(schema)
    assert str(arrow) in str(info.value)


def test_bad_overrides() -> None:
    schema = pa.schema([("a", pa.int64())])
    with pytest.raises(ValueError, match="'nope'"):
        infer_columns(schema, {"nope": "int"})
    with pytest.raises(ValueError, match="'a'.*'float128'"):
        infer_columns(schema, {"a": "float128"})
    with pytest.raises(ValueError, match="repeats"):
        infer_columns(pa.schema([("a", pa.int8()), ("a", pa.int8())]))


def test_inferred_columns_store_the_table(tmp_path: os.PathLike[str]) -> None:
    """Every inferred encoding accepts the values Arrow hands out and gives them back."""
    table = pa.table(
        {
            "s": ["x", "yy"],
            "i": pa.array([-1, 7], pa.int16()),
            "f": pa.array([0.5, 2.0], pa.float64()),
            "b": [b"\x00\x01", b""],
            "d": pa.array([decimal.Decimal("1.250"), decimal.Decimal("-3.000")]),
            "v": pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32(), 2)),
            "m": pa.array([[[1, 2, 3]], [[4, 5, 6], [7, 8, 9]]], pa.list_(pa.list_(pa.int32(), 3))),
        }
    )
    columns = infer_columns(table.schema)
    out = os.path.join(tmp_path, "out")
    with MDSWriter(out=out, columns=columns) as writer:
        for row in table.to_pylist():
            sample = dict(row)
            for name in ("v", "m"):
                sample[name] = np.asarray(row[name], dtype=columns[name].split(":")[1])
            writer.write(sample)
    dataset = StreamingDataset(local=out, batch_size=1)
    got = [dataset[i] for i in range(2)]
    assert [g["s"] for g in got] == ["x", "yy"]
    assert [int(g["i"]) for g in got] == [-1, 7]
    assert got[0]["i"].dtype == np.int16
    assert [float(g["f"]) for g in got] == [0.5, 2.0]
    assert [g["b"] for g in got] == [b"\x00\x01", b""]
    assert [g["d"] for g in got] == [decimal.Decimal("1.250"), decimal.Decimal("-3.000")]
    assert got[1]["v"].tolist() == [3.0, 4.0]
    assert got[1]["m"].tolist() == [[4, 5, 6], [7, 8, 9]]
