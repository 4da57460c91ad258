"""One partition of an engine conversion: one `MDSWriter` into one sub-directory.

Spark, Ray and Dask all convert the same way: every task writes its partition with its own
writer into `<out>/<part>` (locally, or staged locally and uploaded to `<remote>/<part>`), and
the driver merges the partitions' indexes into `<out>/index.json` once every task succeeded.
A reader sees the dataset only through that merged index, written last (atomically).

A task that fails removes its own sub-directory, locally and remotely, before it raises, so
a failed or retried task leaves no half-written partition behind; the error names the
partition and the row.

Engine workers import this module (through the pickled task), so it stays clear of
the uploaders and torch: a worker pays only for the writer and storage.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from streamx.exceptions import ConvertRowError
from streamx.format.index import INDEX_BASENAME
from streamx.format.writers import MDSWriter
from streamx.location import Location as Where
from streamx.storage.aws_credentials import credentials_found
from streamx.storage.filesystems import get_filesystem

if TYPE_CHECKING:
    from streamx.storage.cloud_uploaders import CloudUploader

__all__ = [
    "ConvertRowError",
    "Location",
    "index_location",
    "join_location",
    "open_output",
    "remove_partition",
    "write_partition",
]

logger = logging.getLogger(__name__)

Location = str | tuple[str, str]


def join_location(out: Location, part: str) -> Location:
    """The sub-directory `part` of a local path, remote URL or ``(local, remote)`` pair."""
    if isinstance(out, str):
        return _join(out, part)
    return (_join(out[0], part), _join(out[1], part))


def index_location(out: Location) -> tuple[str, str]:
    """``(local index path, remote index URL or "")`` of a partition, mosaic's index-list form."""
    if isinstance(out, str):
        return (_join(out, INDEX_BASENAME), "")
    return (_join(out[0], INDEX_BASENAME), _join(out[1], INDEX_BASENAME))


def open_output(out: Location, keep_local: bool) -> CloudUploader:
    """Check a conversion's `out` on the driver, before any task runs.

    Returns:
        mosaic's ``CloudUploader`` for `out`: ``.local`` is the local root (a new temporary
        directory for a remote-only `out`), ``.remote`` the remote root or ``None``.

    Raises:
        FileExistsError: if the local directory is not empty.
        FileNotFoundError: if the remote bucket is missing or the credentials cannot see it.
        PermissionError: for an ``s3://`` remote when no AWS credentials can be found
            (streamx would otherwise send unsigned requests, which only public reads allow).
    """
    remote = out if isinstance(out, str) else out[1]
    # Refused only when the chain surely has none: a failed lookup is s3fs's to report.
    if Where.parse(remote).scheme == "s3" and credentials_found() is False:
        raise PermissionError(
            f"No AWS credentials found to write to {remote}: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or another source botocore reads."
        )
    # Imported here, on the driver only: the uploaders import tqdm, which no worker needs.
    from streamx.storage.cloud_uploaders import CloudUploader

    return CloudUploader.get(out, keep_local=keep_local)


def write_partition(
    rows: Iterable[Mapping[str, Any]],
    out: Location,
    writer_kwargs: Mapping[str, Any],
    *,
    label: str,
) -> int:
    """Write `rows` as one MDS dataset at `out`, or remove everything written and raise.

    Args:
        rows: The partition's samples, column name to value.
        out: The partition's directory: a local path, a remote URL or ``(local, remote)``.
        writer_kwargs: `MDSWriter` arguments other than `out` (``columns`` among them).
        label: Names the input in errors, e.g. ``"Spark partition 3 (task 17)"``.

    Returns:
        The number of rows written.

    Raises:
        ConvertRowError: if a row does not fit the columns, naming `label` and the row.
        Exception: a writer or upload error, after the partition was removed.
    """
    writer = MDSWriter(out=out, **dict(writer_kwargs))
    arrays = _ndarray_columns(writer.columns)
    row = -1
    try:
        for row, sample in enumerate(rows):
            try:
                writer.write(_with_arrays(sample, arrays))
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as err:
                raise ConvertRowError(f"{label}, row {row}: {_describe(err)}") from err
        writer.finish()
    except BaseException:
        writer.cancel_future_jobs()
        remove_partition(out)
        raise
    return row + 1


def remove_partition(out: Location) -> None:
    """Delete a partition's files, locally and remotely; failures are logged, not raised."""
    local, remote = (out, None) if isinstance(out, str) else out
    for place in (local, remote):
        if not place:
            continue
        where = Where.parse(place)
        if not where.is_remote:
            shutil.rmtree(where.local_path, True)
            continue
        try:
            fs, path = get_filesystem(place)
            if fs.exists(path):
                fs.rm(path, recursive=True)
        except Exception as err:  # the task's own error is the one to report
            logger.warning("could not remove the failed partition at %s: %r", place, err)


def _ndarray_columns(columns: Mapping[str, str]) -> dict[str, np.dtype[Any]]:
    """The dtype of each ``ndarray`` column that names one."""
    found = {}
    for name, encoding in columns.items():
        parts = encoding.split(":")
        if parts[0] == "ndarray" and len(parts) > 1:
            found[name] = np.dtype(parts[1])
    return found


def _with_arrays(sample: Mapping[str, Any], arrays: Mapping[str, np.dtype[Any]]) -> dict[str, Any]:
    """The sample with list values of ``ndarray`` columns as arrays: pandas and Arrow rows
    hold lists where the encoding takes a numpy array."""
    out = dict(sample)
    for name, dtype in arrays.items():
        value = out.get(name)
        if isinstance(value, (list, tuple)):
            out[name] = np.asarray(value, dtype=dtype)
    return out


def _describe(err: BaseException) -> str:
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    return f"{type(err).__name__}: {text}"


def _join(base: str, part: str) -> str:
    if not Where.parse(base).is_remote:
        return os.path.join(base, part)
    return f"{base.rstrip('/')}/{part}"
