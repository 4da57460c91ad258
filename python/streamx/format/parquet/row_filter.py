"""A row filter over a Parquet source, evaluated once per row group when the index is built.

The epoch's order depends on each shard's sample count, so a filter must be applied before
the order is planned, not while samples stream: the rows a filter keeps are found once, per
row group, by downloading only the columns the filter reads, and each row group becomes a
shard of its kept rows. The order then depends only on the seed, the settings and the
filter (never on the world size), and a resumption lands on the same kept rows. The kept
row numbers are cached beside the footer, named by the file's version and the filter.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.exceptions import CorruptShardError
from streamx.format.parquet.arrow_numpy import numpy_values
from streamx.format.parquet.chunks import column_chunks
from streamx.format.parquet.footer_cache import CachedFooter
from streamx.format.parquet.remapped import RemappedFile, read_row_group
from streamx.format.remote_files import RemoteFile, read_range
from streamx.runtime.atomic_write import write_atomic

__all__ = ["RowFilter", "as_row_filter"]

_THREADS = 8  # row groups whose filter columns download at once
_ROW = "__streamx_row__"


class RowFilter:
    """A pyarrow expression over a source's columns, with a stable name for caching."""

    def __init__(self, expression: Any) -> None:
        self.expression = expression
        self.text = str(expression)
        self.key = hashlib.sha1(self.text.encode()).hexdigest()[:12]

    def kept_name(self, footer_path: str) -> str:
        """The basename, beside the cached footer, of the kept row numbers."""
        return os.path.basename(footer_path).removesuffix(".footer") + f"-{self.key}.kept.npz"

    def columns(self, schema: Any, shown: str) -> list[str]:
        """The columns the filter reads (each one tried away from an empty table).

        Raises:
            ValueError: If the filter reads a column ``schema`` lacks, or does not apply.
        """
        import pyarrow as pa

        empty = schema.empty_table()
        try:
            empty.filter(self.expression)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
            raise ValueError(
                f"The row filter {self.text} does not apply to {shown}: {err}"
            ) from err
        needed = []
        for name in schema.names:
            try:
                empty.drop_columns([name]).filter(self.expression)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                needed.append(name)
        return needed

    def kept_rows(
        self,
        file: RemoteFile,
        parsed: CachedFooter,
        footer_path: str,
        timeout: float,
        retry: int,
    ) -> list[NDArray[np.int32]]:
        """The row numbers the filter keeps in each row group of ``file`` (cached);
        ``parsed``: its footer.

        Raises:
            CorruptShardError: If a row group's filter columns lie outside the file or do
                not decode.
        """
        md = parsed.metadata
        path = os.path.join(os.path.dirname(footer_path), self.kept_name(footer_path))
        if os.path.exists(path):
            with np.load(path) as found:
                return [found[f"rg{n}"] for n in range(md.num_row_groups)]
        columns = self.columns(parsed.schema, file.url)

        def one(number: int) -> NDArray[np.int32]:
            return self._evaluate(file, md, number, columns, timeout, retry)

        with ThreadPoolExecutor(_THREADS) as pool:
            kept = list(pool.map(one, range(md.num_row_groups)))
        buffer = io.BytesIO()
        np.savez(buffer, **{f"rg{n}": rows for n, rows in enumerate(kept)})
        write_atomic(path, buffer.getvalue())
        return kept

    def _evaluate(
        self,
        file: RemoteFile,
        md: Any,
        number: int,
        columns: Sequence[str],
        timeout: float,
        retry: int,
    ) -> NDArray[np.int32]:
        import pyarrow as pa

        chunks = column_chunks(md, number, set(columns), file)
        data = b"".join(read_range(file.url, s, n, file.size, timeout, retry) for s, n in chunks)
        try:
            read = read_row_group(RemappedFile(data, chunks, file.size), md, number, list(columns))
        except Exception as err:  # pyarrow's OSError / ArrowInvalid on bad bytes
            raise CorruptShardError(
                f"{file.url} row group {number}: the filter's columns do not decode ({err})"
            ) from err
        # Built from the buffer: ``pa.array`` of numpy, and ``to_numpy``, import pandas.
        numbers = pa.py_buffer(np.arange(read.num_rows, dtype=np.int32))
        rows = pa.Array.from_buffers(pa.int32(), read.num_rows, [None, numbers])
        kept = read.append_column(_ROW, rows).filter(self.expression).column(_ROW)
        return np.asarray(numpy_values(kept.combine_chunks()), dtype=np.int32)


def as_row_filter(filters: object) -> RowFilter | None:
    """``filters`` as pyarrow takes them: an expression (``pc.field("lang") == "en"``), or
    a list of ``(column, op, value)`` tuples (all must hold), or a list of such lists (any
    may hold).

    Raises:
        ValueError: If ``filters`` is neither.
    """
    if filters is None:
        return None
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if isinstance(filters, pc.Expression):
        return RowFilter(filters)
    try:
        return RowFilter(pq.filters_to_expression(filters))
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"`filters` must be a pyarrow expression or (column, op, value) tuples: {err}"
        ) from err
