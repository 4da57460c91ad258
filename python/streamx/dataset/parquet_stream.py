"""``ParquetStream``: Parquet files read in place, one row group per shard."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamx.dataset.in_place_stream import InPlaceStream
from streamx.format.index import ShardInfo
from streamx.format.parquet.index import MANIFEST, ParquetIndex, build_index
from streamx.format.parquet.local_source import LocalParquetIndex, in_place
from streamx.format.parquet.row_filter import as_row_filter
from streamx.format.parquet.row_group import fetch_row_group

__all__ = ["ParquetStream"]


class ParquetStream(InPlaceStream):
    """A Parquet file, directory or glob (local or remote), read where it lives.

    Each row group is a shard: the epoch order, partitions, resumption, ``cache_limit`` and
    eviction treat it as they treat an MDS shard of as many samples. Footers are read once,
    by range, and cached in ``local``; a row group's download fetches the column chunks of
    ``columns`` only.

    Local files are read where they lie, as LitData reads them: a row group's column chunks
    are read from the file itself, nothing is copied into ``local`` but the footers,
    ``cache_limit`` does not count them and eviction never touches them. Each read checks
    the file still has the size and mtime its footer was read at; a file changed since
    raises ``StaleIndexError`` naming it and the row group (a new dataset reads it again).

    Args:
        remote: A ``.parquet`` file, a directory of them, or a glob, as a path or URL.
        local: Cache directory (``None``: a private one derived from ``remote``).
        columns: Columns to read (``None``: all).
        image_columns: Binary columns of encoded images, to hand out as PIL images.
        allow_schema_drift: Unify the files' schemas where Arrow can (a column a file lacks
            reads as ``None``) instead of refusing files whose schemas differ.
        filters: Rows to keep, as pyarrow takes them: an expression
            (``pc.field("lang") == "en"``) or ``(column, op, value)`` tuples. The kept rows
            are found once per row group, from the filter's columns only, before the
            epoch is planned: the order and resumption are as exact as without a filter,
            and each row group is a shard of its kept rows.
        **kwargs: ``split``, ``proportion``, ``repeat``, ``choose``, ``download_retry``,
            ``download_timeout``, as for :class:`Stream`.

    Examples:
        >>> import tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> path = tempfile.mkdtemp() + "/t.parquet"
        >>> pq.write_table(pa.table({"x": [1, 2, 3]}), path, row_group_size=2)
        >>> stream = ParquetStream(remote=path, local=tempfile.mkdtemp())
        >>> stream.apply_default({"split": None, "download_retry": 2,
        ...     "download_timeout": 60.0, "validate_hash": None, "keep_zip": False})
        >>> stream.get_shards().samples.tolist()
        [2, 1]
    """

    def __init__(
        self,
        *,
        remote: str,
        local: str | None = None,
        columns: Sequence[str] | None = None,
        image_columns: Sequence[str] = (),
        allow_schema_drift: bool = False,
        filters: object = None,
        **kwargs: Any,
    ) -> None:
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError as err:
            raise ImportError(
                "Reading Parquet in place needs pyarrow: pip install 'streamx-data[convert]'"
            ) from err
        if kwargs.get("validate_hash"):
            raise ValueError("`validate_hash` does not apply to Parquet sources")
        super().__init__(remote=remote, local=local, **kwargs)
        if columns is not None and (isinstance(columns, str) or not columns):
            raise ValueError("`columns` must be a non-empty list of column names")
        self.columns = list(columns) if columns is not None else None
        self.image_columns = list(image_columns)
        self.allow_schema_drift = allow_schema_drift
        self.row_filter = as_row_filter(filters)
        self._in_place = False  # known once the source is listed (`build_units`)

    MANIFEST = MANIFEST

    def build_units(self, folder: str) -> ParquetIndex:
        """Lists the source and reads each file's footer (cached), one unit per row group.

        Raises:
            FileNotFoundError: If the source holds no Parquet file.
            CorruptShardError: If a file is not Parquet or its footer is truncated.
            ValueError: If the files' schemas differ in a column read.
        """
        index = in_place(
            build_index(
                self.source,
                folder,
                self.columns,
                float(self.download_timeout),
                int(self.download_retry),
                self.image_columns,
                self.allow_schema_drift,
                self.row_filter,
            )
        )
        self._in_place = isinstance(index, LocalParquetIndex)
        return index

    @property
    def copies_into_cache(self) -> bool:
        """Whether row groups are fetched into ``local``: not where every file is a local
        file, read where it lies."""
        return super().copies_into_cache and not self._in_place

    def prepare_shard(self, shard: ShardInfo) -> int:
        """Fetches the row group's column chunks by range into its local file."""
        return fetch_row_group(shard, float(self.download_timeout), int(self.download_retry))
