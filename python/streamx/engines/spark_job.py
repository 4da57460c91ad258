"""The Spark job shared by ``dataframe_to_mds`` and ``streamx.spark``: one MDS writer per
partition, run by ``mapInPandas`` on the executors.

Each task writes into a sub-directory named by its task attempt id, as mosaicml-streaming
does, so that a retried attempt never writes over a failed one's files (which the failed
attempt removes itself, see :mod:`streamx.engines.partition`). The job returns one
row per partition: where its ``index.json`` lies, locally and remotely.

A task's exception reaches the driver only as text, inside pyspark's ``PythonException``.
When that text ends with a :class:`~streamx.exceptions.ConvertRowError` (a row that does not
fit its column), the driver raises that error again, with the task's message (which names
the partition and row), so callers catch the same class on every engine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pandas as pd
from pyspark import TaskContext
from pyspark.errors import PythonException
from pyspark.sql.dataframe import DataFrame
from pyspark.sql.types import StringType, StructField, StructType

from streamx.engines.partition import index_location, write_partition
from streamx.exceptions import ConvertRowError

__all__ = ["UdfIterable", "run_partitions"]

UdfIterable = Callable[..., Iterable[Mapping[str, Any]]]

_RESULT_SCHEMA = StructType(
    [
        StructField("mds_path_local", StringType(), False),
        StructField("mds_path_remote", StringType(), False),
    ]
)


def run_partitions(
    dataframe: DataFrame,
    mds_path: tuple[str, str],
    writer_kwargs: Mapping[str, Any],
    udf_iterable: UdfIterable | None = None,
    udf_kwargs: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """Write every partition of `dataframe` below `mds_path` and list their indexes.

    Args:
        dataframe: The rows to write.
        mds_path: ``(local root, remote root or "")``; each task writes to ``<root>/<id>``.
        writer_kwargs: ``MDSWriter`` arguments other than ``out``.
        udf_iterable: Turns each pandas batch into samples, with `udf_kwargs`; without it,
            every row is a sample.
        udf_kwargs: Keyword arguments of `udf_iterable`.

    Returns:
        ``(local index path, remote index URL or "")`` per partition, in partition order.

    Raises:
        ConvertRowError: if a task met a row that does not fit its column; the message names
            the partition and row, and pyspark's ``PythonException`` is the ``__cause__``.
        pyspark.errors.PythonException: if a task failed otherwise; its message holds the
            task's traceback.
    """
    kwargs = dict(writer_kwargs)
    udf_args = dict(udf_kwargs or {})

    def write_task(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        context = TaskContext.get()
        if context is None:
            raise RuntimeError("TaskContext.get() returns None")
        part = str(context.taskAttemptId())
        local, remote = mds_path
        out = (
            (os.path.join(local, part), os.path.join(remote, part))
            if remote
            else os.path.join(local, part)
        )
        label = f"Spark partition {context.partitionId()} (task attempt {part})"
        write_partition(_samples(batches, udf_iterable, udf_args), out, kwargs, label=label)
        index_local, index_remote = index_location(out)
        yield pd.DataFrame({"mds_path_local": [index_local], "mds_path_remote": [index_remote]})

    try:
        rows = dataframe.mapInPandas(func=write_task, schema=_RESULT_SCHEMA).collect()
    except PythonException as err:
        row_error = task_row_error(err)
        if row_error is None:
            raise
        raise row_error from err
    return [(row["mds_path_local"], row["mds_path_remote"]) for row in rows]


_ROW_ERROR = f"{ConvertRowError.__module__}.{ConvertRowError.__qualname__}: "
# What follows a traceback's last exception when another one came after it.
_LATER_ERROR = ("\nDuring handling of the above exception", "\nThe above exception was")


def task_row_error(err: PythonException) -> ConvertRowError | None:
    """The :class:`ConvertRowError` a task raised, rebuilt from the traceback text pyspark
    carries to the driver, or ``None`` if the task's last error was something else.

    Examples:
        >>> from pyspark.errors import PythonException
        >>> text = "Traceback ...\\nstreamx.exceptions.ConvertRowError: Spark partition 1, row 4: x"
        >>> task_row_error(PythonException(text))
        ConvertRowError('Spark partition 1, row 4: x')
    """
    params = err.getMessageParameters() or {}
    text = params.get("traceback") or str(err)
    at = text.rfind(_ROW_ERROR)
    if at < 0:
        return None
    message = text[at + len(_ROW_ERROR) :]
    # A JVM stack trace, when Spark is set to add one, comes after the Python traceback.
    message = message.split("\n\nJVM stacktrace:", 1)[0].rstrip("\n")
    if any(marker in message for marker in _LATER_ERROR):
        return None
    return ConvertRowError(message)


def _samples(
    batches: Iterator[pd.DataFrame], udf: UdfIterable | None, udf_kwargs: Mapping[str, Any]
) -> Iterator[Mapping[str, Any]]:
    for batch in batches:
        records = udf(batch, **udf_kwargs) if udf is not None else batch.to_dict("records")
        if not isinstance(records, Iterable):
            raise TypeError(
                f"pandas_processing_fn needs to return an iterable instead of a {type(records)}"
            )
        yield from records
