"""mosaicml-streaming's ``dataframe_to_mds``: a Spark DataFrame to an MDS dataset.

The arguments, inferred columns, errors and return value are mosaic 0.13.0's, and so are
the files: for the same DataFrame and partitioning, every shard and the merged
``index.json`` are byte for byte what mosaic writes (the partition directories are named
by Spark task attempt ids, which differ from run to run in both). The work is streamx's:
its ``MDSWriter`` in each task and its ``merge_index`` once, on the driver, at the end.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from typing import Any

from pyspark.sql.dataframe import DataFrame

from streamx.engines.partition import open_output
from streamx.engines.spark_job import UdfIterable, remove_lost_attempts, run_partitions
from streamx.engines.spark_schema import infer_dataframe_schema
from streamx.storage.merge_index import merge_index as do_merge_index

__all__ = ["dataframe_to_mds"]

logger = logging.getLogger(__name__)


def dataframe_to_mds(
    dataframe: DataFrame,
    merge_index: bool = True,
    mds_kwargs: Mapping[str, Any] | None = None,
    udf_iterable: UdfIterable | None = None,
    udf_kwargs: Mapping[str, Any] | None = None,
) -> tuple[str, str]:
    """Convert a Spark DataFrame to MDS, one partition per Spark task.

    Each task writes its partition with an ``MDSWriter`` into ``<out>/<task attempt id>``
    (staged locally and uploaded when `out` is remote); the driver then merges the
    partitions' indexes into ``<out>/index.json``.

    Args:
        dataframe: The DataFrame to convert.
        merge_index: Merge the partitions' indexes into one at `out`.
        mds_kwargs: ``MDSWriter`` arguments; ``out`` is required. ``columns`` is inferred
            from the DataFrame's types when missing (and checked against them when given,
            unless `udf_iterable` is set), and ``compression`` defaults to ``"zstd"``.
        udf_iterable: Turns each pandas batch of a partition into samples, called with
            `udf_kwargs`; ``mds_kwargs["columns"]`` is then required and not checked.
        udf_kwargs: Keyword arguments of `udf_iterable`.

    Returns:
        ``(local, remote)``: where the dataset was written; ``remote`` is ``""`` for a
        local `out`.

    Raises:
        ValueError: for an empty DataFrame, a missing ``out`` (or ``columns`` with a UDF),
            a column type MDS cannot store, or ``columns`` that do not match the types.
        FileExistsError: if the local directory is not empty.
        FileNotFoundError: if the remote bucket does not exist or the credentials cannot
            see it.
        ConvertRowError: if a task met a row that does not fit its column; the message
            names the partition and row (pyspark's ``PythonException`` is the cause).
        EngineTaskError: if a task's Python worker died (killed or crashed) as often as
            Spark allows; the message names the partition and task attempt.
        pyspark.errors.PythonException: if a task failed otherwise.

    Examples:
        >>> df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, text string")
        >>> dataframe_to_mds(df, mds_kwargs={"out": "/tmp/mds"})  # doctest: +SKIP
        ('/tmp/mds', '')
    """
    if dataframe is None or dataframe.isEmpty():
        raise ValueError("Input dataframe is None or Empty!")
    kwargs = dict(mds_kwargs or {})
    if "out" not in kwargs:
        raise ValueError("`out` and `columns` need to be specified in `mds_kwargs`")
    if "compression" not in kwargs:
        logger.info("Defaulting to zstd compression")
        kwargs["compression"] = "zstd"
    _settle_columns(dataframe, kwargs, udf_iterable is not None)
    out = kwargs["out"]
    uploader = open_output(out, keep_local=kwargs.get("keep_local", False))
    if uploader.remote is None:
        logger.warning(
            "Path %s is taken as local. For FUSE-mounted distributed storage that works, "
            "but consider passing (local_tmp, %r) as out",
            uploader.local,
            uploader.local,
        )
    mds_path = (uploader.local, uploader.remote or "")
    writer_kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    if merge_index:
        writer_kwargs["keep_local"] = True  # the merge reads the partitions' local indexes
    indexes = run_partitions(dataframe, mds_path, writer_kwargs, udf_iterable, udf_kwargs)
    remove_lost_attempts(mds_path, indexes)
    # Without a remote the local copy is the dataset and is always kept.
    keep_local_files = uploader.remote is None or kwargs.get("keep_local") is not False
    if merge_index:
        do_merge_index(indexes, out, keep_local=keep_local_files, download_timeout=60)
    if not keep_local_files:
        shutil.rmtree(uploader.local, ignore_errors=True)
    return mds_path


def _settle_columns(dataframe: DataFrame, kwargs: dict[str, Any], with_udf: bool) -> None:
    """Infer ``kwargs["columns"]`` if missing, else check it (unless a UDF makes the rows)."""
    if with_udf:
        if "columns" not in kwargs:
            raise ValueError(
                "If udf_iterable is specified, user must provide correct `columns` in the "
                "mds_kwargs"
            )
        logger.warning("With udf_iterable set, mds_kwargs['columns'] is not checked")
    elif "columns" not in kwargs:
        kwargs["columns"] = infer_dataframe_schema(dataframe)
        logger.warning("columns inferred from the DataFrame: %s", kwargs["columns"])
    else:
        infer_dataframe_schema(dataframe, kwargs["columns"])
