"""The Spark job shared by ``dataframe_to_mds`` and ``streamx.spark``: one MDS writer per
partition, run by ``mapInPandas`` on the executors.

Each task writes into a sub-directory named by its task attempt id, as mosaicml-streaming
does, so that a retried attempt never writes over a failed one's files (which the failed
attempt removes itself, see :mod:`streamx.engines.partition`). The job returns one
row per partition: where its ``index.json`` lies, locally and remotely.

A task's exception reaches the driver only as text, inside pyspark's ``PythonException``.
When that text ends with a :class:`~streamx.exceptions.ConvertRowError` (a row that does not
fit its column), the driver raises that error again, with the task's message (which names
the partition and row), so callers catch the same class on every engine. A Python worker
that died (killed, crashed) fails the job in the JVM instead; that ``Py4JJavaError`` becomes
an :class:`~streamx.exceptions.EngineTaskError` naming the partition (see
:mod:`streamx.engines.spark_errors`).

An attempt that died leaves its directory behind (it cannot remove itself); once the job
succeeded, :func:`remove_lost_attempts` deletes those the merged index does not list.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pandas as pd
from py4j.protocol import Py4JJavaError
from pyspark import TaskContext
from pyspark.errors import PythonException
from pyspark.sql.dataframe import DataFrame
from pyspark.sql.types import StringType, StructField, StructType

from streamx.engines.partition import (
    index_location,
    join_location,
    remove_partition,
    write_partition,
)
from streamx.engines.spark_errors import job_failure, task_row_error

__all__ = ["UdfIterable", "remove_lost_attempts", "run_partitions"]

logger = logging.getLogger(__name__)

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
        EngineTaskError: if a task's Python worker died (killed or crashed) as often as
            Spark allows; the message names the partition, the task attempt and Spark's
            reason, and py4j's ``Py4JJavaError`` is the ``__cause__``.
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
    except Py4JJavaError as err:
        raise job_failure(str(err), mds_path[1] or mds_path[0]) from err
    return [(row["mds_path_local"], row["mds_path_remote"]) for row in rows]


def remove_lost_attempts(mds_path: tuple[str, str], indexes: list[tuple[str, str]]) -> list[str]:
    """Delete the directories of task attempts that died, after the job succeeded.

    Only what is provably this job's goes: the local root was empty when the job began
    (``open_output`` refuses anything else), so a task-attempt directory in it that no
    partition index of the job lies in was left by an attempt that died; its remote twin
    (the same name under the remote root) is that attempt's upload. An attempt whose
    directory the driver cannot see (an executor's own disk) is left alone.

    Args:
        mds_path: ``(local root, remote root or "")`` of the job.
        indexes: ``(local index path, remote index URL)`` of each committed partition.

    Returns:
        The names of the attempt directories removed.
    """
    local, remote = mds_path
    if not os.path.isdir(local):
        return []
    kept = {os.path.basename(os.path.dirname(index_local)) for index_local, _ in indexes}
    lost = sorted(
        name
        for name in os.listdir(local)
        if name.isdigit() and name not in kept and os.path.isdir(os.path.join(local, name))
    )
    for name in lost:
        logger.info("removing the directory of Spark task attempt %s, which died", name)
        remove_partition(join_location((local, remote) if remote else local, name))
    return lost


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
