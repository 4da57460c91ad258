"""Dask DataFrames to MDS (``pip install 'streamx-data[dask]'``): one writer per partition,
run as Dask tasks, then one index merge on the client."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
from dask.base import compute
from dask.delayed import delayed

from streamx.convert.infer import infer_columns
from streamx.engines.partition import (
    Location,
    index_location,
    join_location,
    open_output,
    write_partition,
)
from streamx.storage.merge_index import merge_index

__all__ = ["to_mds"]


def to_mds(
    ddf: dd.DataFrame,
    out: Location,
    *,
    columns: Mapping[str, str] | None = None,
    compression: str | None = "zstd",
    hashes: list[str] | None = None,
    size_limit: int | str | None = 1 << 26,
    keep_local: bool = False,
) -> Location:
    """Write a Dask DataFrame as one MDS dataset, each partition by its own task.

    Partition ``i`` is written into ``<out>/<i>`` (zero-padded); once every partition is
    written, their indexes are merged into ``<out>/index.json``, in partition order. The
    index of the Dask DataFrame is not written.

    Args:
        ddf: The rows to write.
        out: A local directory, a remote URL (staged in temporary local directories) or a
            ``(local, remote)`` pair. The local directory must be empty or missing.
        columns: Column name to MDS encoding, replacing those inferred from the dtypes
            (strings, integers, floats, bytes, numeric lists).
        compression: Shard compression, e.g. ``"zstd"`` or ``None``.
        hashes: Hash algorithms recorded for every shard.
        size_limit: Shard size limit in bytes (or ``"64mb"``).
        keep_local: With a remote, keep the local copy too.

    Returns:
        `out`, where the merged ``index.json`` now lies.

    Raises:
        TypeError: for a column with no inferred encoding and no entry in `columns`.
        ValueError: if the DataFrame has no rows, or `columns` names a missing column.
        ConvertRowError: for a row that does not fit its column, naming the partition and
            the row; no merged index is written then.
        FileExistsError: if the local directory is not empty.
        FileNotFoundError: if the remote bucket is missing or the credentials cannot see it.

    Examples:
        >>> import dask.dataframe as dd, pandas as pd
        >>> from streamx.dask import to_mds
        >>> ddf = dd.from_pandas(pd.DataFrame({"id": [1, 2], "text": ["a", "b"]}), npartitions=2)
        >>> to_mds(ddf, "/tmp/mds-dask", columns={"id": "int"})  # doctest: +SKIP
        '/tmp/mds-dask'
    """
    encodings = infer_columns(_arrow_schema(ddf), columns)
    uploader = open_output(out, keep_local=keep_local)
    root: Location = (uploader.local, uploader.remote) if uploader.remote else uploader.local
    kwargs: dict[str, Any] = {
        "columns": encodings,
        "compression": compression,
        "hashes": hashes,
        "size_limit": size_limit,
        # Staged files go once uploaded; the merge then reads the indexes from the remote.
        "keep_local": keep_local,
        "exist_ok": True,  # a retried task replaces its earlier attempt's files
    }
    width = len(str(ddf.npartitions))
    delayed_parts = ddf.to_delayed()  # type: ignore[no-untyped-call]
    parts = [
        delayed(_write)(part, join_location(root, f"{i:0{width}d}"), kwargs, i)
        for i, part in enumerate(delayed_parts)
    ]
    results = compute(*parts)  # type: ignore[no-untyped-call]
    indexes = [index for index in results if index is not None]
    if not indexes:
        raise ValueError(f"nothing to write to {out}: the DataFrame has no rows")
    keep = uploader.remote is None or keep_local
    merge_index(indexes, out, keep_local=keep, download_timeout=60)
    if not keep:
        shutil.rmtree(uploader.local, ignore_errors=True)
    return out


def _arrow_schema(ddf: dd.DataFrame) -> pa.Schema:
    """The Arrow schema of the columns; object columns are typed from a sample of rows."""
    meta = ddf._meta
    if not any(dtype is np.dtype(object) for dtype in meta.dtypes):
        return pa.Schema.from_pandas(meta, preserve_index=False)
    head = ddf.head(16, npartitions=-1)
    return pa.Schema.from_pandas(head, preserve_index=False)


def _write(part: pd.DataFrame, out: Location, kwargs: dict[str, Any], number: int) -> Any:
    if part.empty:
        return None
    rows: Iterable[Mapping[str, Any]] = part.to_dict("records")  # type: ignore[assignment]
    write_partition(rows, out, kwargs, label=f"Dask partition {number}")
    return index_location(out)
