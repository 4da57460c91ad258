"""A Ray Data datasink writing MDS: one writer per write task, one index merge at the end.

Each write task writes its blocks into ``<out>/<task index>`` (see
:mod:`streamx.engines.partition`); :meth:`MDSDatasink.on_write_complete` runs once
on the driver after every task succeeded and commits the dataset by writing the merged
``index.json``. A retried task reuses its directory, replacing what an earlier attempt left.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
from ray.data._internal.execution.interfaces import TaskContext
from ray.data.block import Block, BlockAccessor
from ray.data.datasource import Datasink, WriteResult

from streamx.convert.infer import infer_columns
from streamx.engines.partition import (
    Location,
    index_location,
    join_location,
    open_output,
    write_partition,
)
from streamx.storage.merge_index import merge_index

__all__ = ["MDSDatasink"]

# One write task's result: its index location, or None for an empty task.
PartitionIndex = tuple[str, str] | None


class MDSDatasink(Datasink[PartitionIndex]):
    """Writes a Ray Dataset as one MDS dataset with ``Dataset.write_datasink``.

    Columns are inferred from the Dataset's Arrow schema (strings, integers, floats,
    binaries, numeric lists), with `columns` overriding any of them.

    Args:
        out: A local directory, a remote URL (staged in temporary local directories) or a
            ``(local, remote)`` pair. The local directory must be empty or missing.
        columns: Column name to MDS encoding, replacing the inferred ones.
        compression: Shard compression, e.g. ``"zstd"`` or ``None``.
        hashes: Hash algorithms recorded for every shard.
        size_limit: Shard size limit in bytes (or ``"64mb"``).
        keep_local: With a remote, keep the local copy too.

    Raises:
        FileExistsError: (at write start) if the local directory is not empty.
        FileNotFoundError: (at write start) if the remote bucket is missing or the
            credentials cannot see it.
        TypeError: (at write start) for a column whose type has no inferred encoding and
            no override in `columns`.
        ConvertRowError: (from a write task) for a row that does not fit its column,
            naming the task and row; no merged index is written then.

    Examples:
        >>> import ray
        >>> from streamx.ray import MDSDatasink
        >>> rows = [{"id": i, "text": str(i)} for i in range(10)]
        >>> ds = ray.data.from_items(rows)  # doctest: +SKIP
        >>> ds.write_datasink(MDSDatasink("/tmp/mds"))  # doctest: +SKIP
    """

    def __init__(
        self,
        out: Location,
        *,
        columns: Mapping[str, str] | None = None,
        compression: str | None = "zstd",
        hashes: list[str] | None = None,
        size_limit: int | str | None = 1 << 26,
        keep_local: bool = False,
    ) -> None:
        self.out = out
        self.overrides = dict(columns or {})
        self.keep_local = keep_local
        self._writer_kwargs: dict[str, Any] = {
            "compression": compression,
            "hashes": hashes,
            "size_limit": size_limit,
            # Staged files go once uploaded; the merge then reads the indexes from the remote.
            "keep_local": keep_local,
            "exist_ok": True,  # a retried task replaces its earlier attempt's files
        }
        self._columns: dict[str, str] | None = None
        self._root: Location | None = None

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        """Check `out` and settle the columns, on the driver, before any task runs."""
        uploader = open_output(self.out, keep_local=self.keep_local)
        self._root = (uploader.local, uploader.remote) if uploader.remote else uploader.local
        if schema is not None:
            self._columns = infer_columns(schema, self.overrides)

    def write(self, blocks: Iterable[Block], ctx: TaskContext) -> PartitionIndex:
        """Write one task's blocks into its own sub-directory."""
        if self._root is None:
            raise RuntimeError("MDSDatasink.write ran before on_write_start")
        out = join_location(self._root, f"{ctx.task_idx:05d}")
        rows = self._rows(blocks)
        first = next(rows, None)
        if first is None:
            return None
        kwargs = dict(self._writer_kwargs, columns=self._columns)
        label = f"Ray write task {ctx.task_idx}"
        write_partition(_chain(first, rows), out, kwargs, label=label)
        return index_location(out)

    def _rows(self, blocks: Iterable[Block]) -> Any:
        for block in blocks:
            accessor = BlockAccessor.for_block(block)
            if self._columns is None:  # no schema reached the driver: infer per task
                self._columns = infer_columns(accessor.to_arrow().schema, self.overrides)
            yield from accessor.iter_rows(public_row_format=True)

    def on_write_complete(self, write_result: WriteResult[PartitionIndex]) -> None:
        """Commit: merge the tasks' indexes into ``<out>/index.json``, in task order."""
        indexes = sorted(r for r in write_result.write_returns if r is not None)
        if not indexes:
            raise ValueError(f"nothing to write to {self.out}: the Dataset has no rows")
        assert self._root is not None
        remote = not isinstance(self._root, str)
        keep = not remote or self.keep_local
        merge_index(list(indexes), self.out, keep_local=keep, download_timeout=60)
        if not keep:
            shutil.rmtree(self._root[0], ignore_errors=True)


def _chain(first: Any, rest: Any) -> Any:
    yield first
    yield from rest
