"""Spark SQL types to MDS encodings, with mosaicml-streaming 0.13.0's rules and messages.

`SPARK_TO_MDS` is keyed by type instances, as mosaic's is: Spark types compare by value,
so ``ArrayType(IntegerType())`` finds its entry and any other element type does not. A
``None`` value marks a Spark type that MDS cannot store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamx.util import get_import_exception_message

try:
    from pyspark.sql.dataframe import DataFrame
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        ByteType,
        DataType,
        DateType,
        DayTimeIntervalType,
        DecimalType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        MapType,
        NullType,
        ShortType,
        StringType,
        StructType,
        TimestampNTZType,
        TimestampType,
    )
except ImportError as err:  # pyspark is the [spark] extra
    err.msg = get_import_exception_message(err.name or "pyspark", extra_deps="spark")
    raise

from streamx.format.encodings import _encodings

__all__ = ["SPARK_TO_MDS", "infer_dataframe_schema", "is_json_compatible", "spark_type_to_mds"]

SPARK_TO_MDS: dict[DataType, str | None] = {
    ByteType(): "uint8",
    ShortType(): "uint16",
    IntegerType(): "int32",
    LongType(): "int64",
    FloatType(): "float32",
    DoubleType(): "float64",
    DecimalType(): "str_decimal",
    StringType(): "str",
    BinaryType(): "bytes",
    BooleanType(): None,
    TimestampType(): None,
    TimestampNTZType(): None,
    DateType(): None,
    DayTimeIntervalType(): None,
    ArrayType(IntegerType()): "ndarray:int32",
    ArrayType(ShortType()): "ndarray:int16",
    ArrayType(LongType()): "ndarray:int64",
    ArrayType(FloatType()): "ndarray:float32",
    ArrayType(DoubleType()): "ndarray:float64",
}

# Encodings that take a Python object from a binary column (the user decodes nothing).
_BINARY_OBJECT_ENCODINGS = ("pil", "png", "jpeg", "pkl")


def is_json_compatible(data_type: Any) -> bool:
    """Whether values of a Spark type can be stored with the ``json`` encoding.

    Args:
        data_type: A Spark SQL ``DataType``; structs, arrays and maps are checked all the
            way down.

    Returns:
        True if every leaf is a string, integer, float, boolean or null.

    Examples:
        >>> from pyspark.sql.types import ArrayType, StringType
        >>> is_json_compatible(ArrayType(StringType()))
        True
    """
    if isinstance(data_type, StructType):
        return all(is_json_compatible(field.dataType) for field in data_type.fields)
    if isinstance(data_type, ArrayType):
        return is_json_compatible(data_type.elementType)
    if isinstance(data_type, MapType):
        return is_json_compatible(data_type.keyType) and is_json_compatible(data_type.valueType)
    return isinstance(data_type, (StringType, IntegerType, FloatType, BooleanType, NullType))


def spark_type_to_mds(data_type: Any) -> str:
    """The MDS encoding of a Spark type under mosaic's table.

    Args:
        data_type: A Spark SQL ``DataType``; any precision of ``DecimalType`` counts.

    Raises:
        ValueError: if MDS has no encoding for the type.
    """
    key = DecimalType() if isinstance(data_type, DecimalType) else data_type
    mds_type = SPARK_TO_MDS.get(key)
    if mds_type is None:
        raise ValueError(f"{data_type} is not supported by dataframe_to_mds")
    return mds_type


def infer_dataframe_schema(
    dataframe: DataFrame, user_defined_cols: Mapping[str, Any] | None = None
) -> dict[str, str] | None:
    """Infer a DataFrame's MDS columns, or check a user's columns against its types.

    Args:
        dataframe: The Spark DataFrame to convert.
        user_defined_cols: Column name to MDS encoding, as given to ``MDSWriter``; when
            set, each is checked against the DataFrame's type of that column.

    Returns:
        Column name to encoding for every column when `user_defined_cols` is ``None``,
        else ``None`` once the user's columns passed the check.

    Raises:
        ValueError: for a column the DataFrame lacks, a type MDS cannot store, or an
            encoding that does not match the column's type.

    Examples:
        >>> infer_dataframe_schema(spark.range(3))  # doctest: +SKIP
        {'id': 'int64'}
    """
    if user_defined_cols is not None:
        for name, encoding in user_defined_cols.items():
            _check_user_column(dataframe, name, encoding)
        return None
    schema: dict[str, str] = {}
    for field in dataframe.schema:
        encoding = spark_type_to_mds(field.dataType)
        if encoding.split(":")[0] not in _encodings:
            raise ValueError(f"{encoding} is not supported by dataframe_to_mds")
        schema[field.name] = encoding
    return schema


def _check_user_column(dataframe: DataFrame, name: str, encoding: str) -> None:
    if name not in dataframe.columns:
        raise ValueError(f"{name} is not a column of input dataframe: {dataframe.columns}")
    if encoding.startswith("ndarray:") and encoding.count(":") == 2:
        encoding = encoding.rsplit(":", 1)[0]  # the shape does not take part in the check
    actual = dataframe.schema[name].dataType
    if encoding not in {v for v in SPARK_TO_MDS.values() if v}:
        if encoding == "json":
            if is_json_compatible(actual):
                return
            raise ValueError(f"{name} can not be encoded by MDS JSON.")
        if encoding in _BINARY_OBJECT_ENCODINGS:
            if isinstance(actual, BinaryType):
                return
            raise ValueError(f"Non-binary col {name} cannot encode as {encoding}.")
        raise ValueError(f"{encoding} is not supported by dataframe_to_mds")
    mapped = spark_type_to_mds(actual)
    if encoding != mapped:
        raise ValueError(
            f"Mismatched types: column name `{name}` is `{mapped}` in DataFrame but "
            f"`{encoding}` in user_defined_cols"
        )
