"""Tables for the Parquet tests, written as Parquet and as the equivalent MDS."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from streamx import MDSWriter
from streamx.base.util import merge_index


def blob(i: int) -> bytes:
    """200 bytes that do not compress, the same for the same id."""
    return np.random.default_rng(i).bytes(200)


def table(rows: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + rows))
    return pa.table(
        {
            "id": ids,
            "text": [f"row {i}" for i in ids],
            "vec": pa.array([[float(i), i + 0.5] for i in ids], pa.list_(pa.float32(), 2)),
            "tokens": [list(range(i % 5)) for i in ids],
            "blob": [blob(i) for i in ids],
            "w0": [i * 2 for i in ids],
            "w1": [i * 3 for i in ids],
            "w2": [f"{i}" * 20 for i in ids],
        }
    )


def write_parquet(path: str, rows: int, group: int, start: int = 0) -> None:
    """``rows`` rows (ids from ``start``) in row groups of ``group``."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table(rows, start), path, row_group_size=group)


def write_mds_like(out: str, sizes: list[int]) -> None:
    """The same ids as MDS, one shard per entry of ``sizes`` (a row group each)."""
    start = 0
    for number, size in enumerate(sizes):
        with MDSWriter(out=f"{out}/part{number:04d}", columns={"id": "int"}) as writer:
            for i in range(start, start + size):
                writer.write({"id": i})
        start += size
    merge_index(out, keep_local=True)


def text_rows_parquet(rows: int, seed: int, **options: Any) -> bytes:
    """One row group (unless ``options`` set ``row_group_size``) of ``rows`` rows (``id``;
    ``text`` of 200-499 characters that do not compress; ``label``, a null every 7th) in
    pages of about 16 KiB, as Parquet bytes; ``options`` go to
    ``pyarrow.parquet.write_table``."""
    rng = np.random.default_rng(seed)
    text = [rng.bytes(250).hex()[: 200 + i % 300] for i in range(rows)]
    table = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "text": text,
            "label": [None if i % 7 == 0 else f"class-{i % 13}" for i in range(rows)],
        }
    )
    buf = io.BytesIO()
    options.setdefault("row_group_size", rows)
    pq.write_table(table, buf, data_page_size=16 << 10, **options)
    return buf.getvalue()
