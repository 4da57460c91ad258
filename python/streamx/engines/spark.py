"""Spark DataFrames to MDS with streamx's own arguments (``pip install 'streamx-data[spark]'``).

The same job as :func:`streamx.base.converters.dataframe_to_mds` (one writer per Spark task,
one index merge on the driver), without mosaic's ``mds_kwargs`` shape: columns come from the
DataFrame's types, and any column can be given an encoding of its own.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping

from pyspark.sql.dataframe import DataFrame

from streamx.engines.partition import Location, open_output
from streamx.engines.spark_job import remove_lost_attempts, run_partitions
from streamx.engines.spark_schema import spark_type_to_mds
from streamx.storage.merge_index import merge_index

__all__ = ["dataframe_columns", "write_mds"]


def dataframe_columns(
    dataframe: DataFrame, overrides: Mapping[str, str] | None = None
) -> dict[str, str]:
    """MDS columns for a DataFrame: each column's encoding from its Spark type, unless
    `overrides` names one.

    Args:
        dataframe: The DataFrame whose schema is read.
        overrides: Column name to MDS encoding (e.g. ``{"image": "jpeg", "meta": "json"}``),
            used as given; every other column is inferred.

    Raises:
        ValueError: for an override naming no column of the DataFrame, or a column whose
            type has no MDS encoding and no override; the message names the column.

    Examples:
        >>> dataframe_columns(spark.range(2), {"id": "int"})  # doctest: +SKIP
        {'id': 'int'}
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(dataframe.columns))
    if unknown:
        raise ValueError(f"columns {unknown} are not in the DataFrame: {dataframe.columns}")
    columns: dict[str, str] = {}
    for field in dataframe.schema:
        if field.name in overrides:
            columns[field.name] = overrides[field.name]
            continue
        try:
            columns[field.name] = spark_type_to_mds(field.dataType)
        except ValueError:
            raise ValueError(
                f"column {field.name!r} has type {field.dataType}, which has no MDS encoding; "
                f"give it one in columns=, e.g. {{{field.name!r}: 'pkl'}} or 'json'"
            ) from None
    return columns


def write_mds(
    dataframe: DataFrame,
    out: Location,
    *,
    columns: Mapping[str, str] | None = None,
    compression: str | None = "zstd",
    hashes: list[str] | None = None,
    size_limit: int | str | None = 1 << 26,
    keep_local: bool = False,
) -> Location:
    """Write a DataFrame as one MDS dataset, each partition by its own Spark task.

    Args:
        dataframe: The rows to write; its partitioning decides the partition directories.
        out: A local directory, a remote URL (staged in a temporary local directory) or a
            ``(local, remote)`` pair. The local directory must be empty or missing.
        columns: Per-column encodings that replace the ones inferred from the types.
        compression: Shard compression, e.g. ``"zstd"``, ``"zstd:7"`` or ``None``.
        hashes: Hash algorithms recorded for every shard.
        size_limit: Shard size limit in bytes (or ``"64mb"``).
        keep_local: With a remote, keep the local copy too.

    Returns:
        `out`, where the merged ``index.json`` now lies.

    Raises:
        ValueError: for an empty DataFrame, or a column with no encoding.
        FileExistsError: if the local directory is not empty.
        FileNotFoundError: if the remote bucket is missing or the credentials cannot see it.
        ConvertRowError: if a task met a row that does not fit its column; the message
            names the partition and row. No merged index is written then.
        EngineTaskError: if a task's Python worker died (killed or crashed) as often as
            Spark allows; the message names the partition and task attempt.
        pyspark.errors.PythonException: if a task failed otherwise.

    Examples:
        >>> from streamx.spark import write_mds
        >>> df = spark.createDataFrame([(1, b"...")], "id long, image binary")  # doctest: +SKIP
        >>> write_mds(df, "s3://bucket/ds", columns={"image": "jpeg"})  # doctest: +SKIP
        's3://bucket/ds'
    """
    if dataframe.isEmpty():
        raise ValueError("the DataFrame to write has no rows")
    writer_kwargs = {
        "columns": dataframe_columns(dataframe, columns),
        "compression": compression,
        "hashes": hashes,
        "size_limit": size_limit,
        # Staged files go once uploaded; the merge then reads the indexes from the remote.
        "keep_local": keep_local,
    }
    uploader = open_output(out, keep_local=keep_local)
    mds_path = (uploader.local, uploader.remote or "")
    indexes = run_partitions(dataframe, mds_path, writer_kwargs)
    remove_lost_attempts(mds_path, indexes)
    keep = uploader.remote is None or keep_local
    merge_index(indexes, out, keep_local=keep, download_timeout=60)
    if not keep:
        shutil.rmtree(uploader.local, ignore_errors=True)
    return out
