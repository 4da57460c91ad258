"""One part, written by one process: read its rows, write them with MDSWriter, commit."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamx.convert.destination import Destination
from streamx.convert.errors import ConvertError
from streamx.convert.sources.base import Part, Source
from streamx.format.encodings import mds_encode
from streamx.format.writers.mds import MDSWriter

__all__ = ["PartJob", "write_part"]


@dataclass(frozen=True)
class PartJob:
    """Everything a worker needs for one part; pickles into the worker process."""

    source: Source
    part: Part
    columns: Mapping[str, str]
    out: str
    writer_kwargs: Mapping[str, Any]


def write_part(job: PartJob) -> int:
    """Writes one part and makes it visible; returns its number of samples.

    Raises:
        ConvertError: A row does not fit its column, or the input cannot be read; the message
            names the file and row.
    """
    destination = Destination(job.out)
    written = destination.part_out(job.part.index)
    count = 0
    try:
        with MDSWriter(out=written, columns=dict(job.columns), **job.writer_kwargs) as writer:
            for name, row, sample in job.source.rows(job.part, job.columns):
                try:
                    writer.write(sample)
                except Exception as err:
                    raise ConvertError(_row_error(name, row, sample, job.columns, err)) from err
                count += 1
    except BaseException:
        if not destination.remote:
            shutil.rmtree(written, ignore_errors=True)
        raise
    destination.commit_part(job.part.index, written)
    return count


def _row_error(
    name: str, row: int, sample: Mapping[str, Any], columns: Mapping[str, str], err: Exception
) -> str:
    """Names the file, the row and, when one column's value is to blame, that column."""
    where = f"{name}, row {row}"
    missing = [c for c in columns if c not in sample]
    if missing:
        return f"{where}: lacks column(s) {missing}."
    for column, encoding in columns.items():
        value = sample[column]
        try:
            mds_encode(encoding, value)
        except Exception as cause:
            shown = repr(value)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            return (
                f"{where}: column {column!r} ({encoding}) cannot store {shown}: "
                f"{type(cause).__name__}: {cause}"
            )
    return f"{where}: {type(err).__name__}: {err}"
