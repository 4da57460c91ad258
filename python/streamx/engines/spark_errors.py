"""A failed Spark task in streamx's words, on the driver.

A task's exception reaches the driver only as text: pyspark's ``PythonException`` when the
Python code raised, or py4j's ``Py4JJavaError`` (the JVM's "Job aborted due to stage
failure") when the Python worker itself died: killed by the OS, crashed in native code.
Both are turned into streamx errors that name the partition and task attempt, with the
engine's error as the ``__cause__``.
"""

from __future__ import annotations

import re

from pyspark.errors import PythonException

from streamx.exceptions import ConvertRowError, EngineTaskError

__all__ = ["job_failure", "task_row_error"]

_ROW_ERROR = f"{ConvertRowError.__module__}.{ConvertRowError.__qualname__}: "
# What follows a traceback's last exception when another one came after it.
_LATER_ERROR = ("\nDuring handling of the above exception", "\nThe above exception was")

# Spark's scheduler names the last failed attempt as "Lost task <index>.<attempt> in stage
# <stage> (TID <task attempt id>) (<host> executor <id>): <error>"; for a mapInPandas
# collect the task index is the partition, and the TID names the attempt's directory.
_LOST_TASK = re.compile(
    r"Lost task (?P<part>\d+)\.\d+ in stage \S+ \(TID (?P<tid>\d+)\)"
    r"(?: \((?P<where>[^)]*)\))?: (?P<reason>[^\n]*)"
)
_FAILED_TIMES = re.compile(r"Task \d+ in stage \S+ failed (?P<times>\d+) times")
_WORKER_DIED = "Python worker exited unexpectedly"


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


def job_failure(java_text: str, out: str) -> EngineTaskError:
    """The error for a Spark job that the JVM aborted, from the text of its ``Py4JJavaError``.

    Args:
        java_text: ``str()`` of the ``Py4JJavaError`` (the JVM exception and its trace).
        out: Where the job was writing, named in the message.

    Examples:
        >>> text = ("SparkException: Job aborted due to stage failure: Task 1 in stage 2.0 "
        ...     "failed 4 times, most recent failure: Lost task 1.3 in stage 2.0 (TID 9) "
        ...     "(10.0.0.5 executor 2): SparkException: Python worker exited unexpectedly "
        ...     "(crashed)\\n\\tat org.apache...")
        >>> print(job_failure(text, "/data/mds"))  # doctest: +NORMALIZE_WHITESPACE
        Spark partition 1 (task attempt 9, on 10.0.0.5 executor 2) failed after 4 attempts
        writing MDS to /data/mds: SparkException: Python worker exited unexpectedly (crashed) (the
        Python worker was killed, e.g. by the out-of-memory killer, or crashed in native code)
    """
    lost = _LOST_TASK.search(java_text)
    if lost is None:
        return EngineTaskError(f"the Spark job writing MDS to {out} failed: {_first(java_text)}")
    where = f", on {lost['where']}" if lost["where"] else ""
    failed = _FAILED_TIMES.search(java_text)
    times = ""
    if failed:
        times = f" after {failed['times']} attempt{'' if failed['times'] == '1' else 's'}"
    reason = lost["reason"].strip()
    if _WORKER_DIED in reason:
        reason += (
            " (the Python worker was killed, e.g. by the out-of-memory killer, or crashed in "
            "native code)"
        )
    return EngineTaskError(
        f"Spark partition {lost['part']} (task attempt {lost['tid']}{where}) failed{times} "
        f"writing MDS to {out}: {reason}"
    )


def _first(java_text: str) -> str:
    """The JVM exception's first line, without py4j's "An error occurred while calling"."""
    for line in java_text.splitlines():
        line = line.strip().removeprefix(": ")
        if line and not line.startswith("An error occurred while calling"):
            return line
    return java_text.strip()
