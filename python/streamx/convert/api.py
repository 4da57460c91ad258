"""The converter's Python API: :func:`convert` for files and datasets, :func:`optimize` for a
user function over inputs (LitData's shape)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamx.convert.destination import Destination
from streamx.convert.errors import ConvertError
from streamx.convert.runner import StartMethod, default_workers, run_jobs
from streamx.convert.sources import InputFormat, Source, open_source
from streamx.convert.sources.iterable import FunctionSource
from streamx.convert.worker import PartJob
from streamx.format.encodings import is_mds_encoding

__all__ = ["ConvertResult", "convert", "optimize"]


@dataclass(frozen=True)
class ConvertResult:
    """What a conversion did: ``parts`` in all, ``skipped`` of them done by an earlier run,
    ``samples`` written by this run, and the ``columns`` used."""

    out: str
    parts: int
    skipped: int
    samples: int
    columns: dict[str, str]


def convert(
    source: Any,
    out: str,
    *,
    format: InputFormat = "auto",
    columns: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    num_workers: int | None = None,
    compression: str | None = None,
    hashes: Sequence[str] | None = None,
    size_limit: int | str | None = 1 << 26,
    rows_per_part: int | None = None,
    progress: bool = True,
    start_method: StartMethod | None = None,
) -> ConvertResult:
    """Converts files or a dataset to MDS in parallel processes, resuming an unfinished run.

    Args:
        source: A path or fsspec URL (Parquet, Arrow, JSONL or CSV files, an image folder
            with one sub-directory per class, WebDataset ``.tar`` shards, a LitData chunk
            directory, a ``save_to_disk`` directory), or a ``datasets.Dataset``.
        out: The output directory or remote URL (``s3://...``); written directly.
        format: The input kind; ``"auto"`` guesses from the content.
        columns: Column name -> MDS encoding, replacing the inferred ones entirely.
        overrides: Column name -> MDS encoding for some columns, over the inferred ones.
        num_workers: Processes; default every core.
        compression: Shard compression, e.g. ``"zstd:7"``.
        hashes: Shard hash algorithms, e.g. ``["sha1", "xxh64"]``.
        size_limit: Shard size limit (bytes or ``"64mb"``).
        rows_per_part: Rows (images, dataset rows) per part for inputs split by row; default
            about 64 parts, and for an image folder one part per 16 MiB of images (at
            least one, at most 64). Parquet splits by row group, other files by file.
        progress: Show a progress bar (parts done, samples written) on stderr, when stderr
            is a terminal.
        start_method: How workers start; default ``fork`` on Linux, else ``spawn``.

    Returns:
        A :class:`ConvertResult`.

    Raises:
        ConvertError: An unreadable input, a row that does not fit its column (naming file
            and row), an unwritable ``out``, or an unfinished conversion of other settings there.
        TypeError: A column type with no inferred encoding and no override.
        ValueError: An invalid encoding, compression or size limit.

    Examples:
        >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> root = tempfile.mkdtemp()
        >>> pq.write_table(pa.table({"text": ["a", "b"], "id": [1, 2]}), f"{root}/t.parquet")
        >>> result = convert(f"{root}/t.parquet", f"{root}/mds", progress=False)
        >>> result.samples, result.columns
        (2, {'text': 'str', 'id': 'int64'})
    """
    opened = open_source(source, format, rows_per_part)
    return _run(
        opened,
        out,
        columns,
        overrides,
        num_workers,
        progress,
        start_method,
        {
            "compression": compression,
            "hashes": list(hashes or []) or None,
            "size_limit": size_limit,
        },
    )


def optimize(
    fn: Callable[[Any], Any],
    inputs: Sequence[Any],
    out: str,
    *,
    columns: Mapping[str, str] | None = None,
    num_workers: int | None = None,
    compression: str | None = None,
    hashes: Sequence[str] | None = None,
    size_limit: int | str | None = 1 << 26,
    inputs_per_part: int | None = None,
    progress: bool = True,
    start_method: StartMethod | None = None,
) -> ConvertResult:
    """Writes ``fn(input)`` for every input as MDS, LitData ``optimize``-style, in parallel.

    Args:
        fn: Called with each input; returns a dict (one sample) or yields dicts. Must pickle
            (a module-level function) unless workers fork.
        inputs: The inputs, in output order (file names, ids, ...); must pickle.
        out: The output directory or remote URL.
        columns: Column name -> MDS encoding; default inferred from ``fn(inputs[0])``.
        num_workers: Processes; default every core.
        compression: Shard compression, e.g. ``"zstd:7"``.
        hashes: Shard hash algorithms.
        size_limit: Shard size limit.
        inputs_per_part: Inputs per part (the unit of work and of resume); default about
            64 parts.
        progress: Show a progress bar on stderr, when stderr is a terminal.
        start_method: How workers start; default ``fork`` on Linux, else ``spawn``.

    Returns:
        A :class:`ConvertResult`.

    Raises:
        ConvertError: ``fn`` raised or gave a non-dict (naming the input), a sample does not
            fit its column, or ``out`` cannot be written.

    Examples:
        >>> import tempfile
        >>> def square(i):
        ...     return {"i": i, "sq": i * i}
        >>> optimize(square, range(10), tempfile.mkdtemp(), progress=False).samples
        10
    """
    source = FunctionSource(fn, list(inputs), inputs_per_part)
    return _run(
        source,
        out,
        columns,
        None,
        num_workers,
        progress,
        start_method,
        {
            "compression": compression,
            "hashes": list(hashes or []) or None,
            "size_limit": size_limit,
        },
    )


def _run(
    source: Source,
    out: str,
    columns: Mapping[str, str] | None,
    overrides: Mapping[str, str] | None,
    num_workers: int | None,
    progress: bool,
    start_method: StartMethod | None,
    writer_kwargs: dict[str, Any],
) -> ConvertResult:
    # Overrides go in before inference: they can name a column inference rejects.
    chosen = dict(columns) if columns else source.columns(overrides or {})
    chosen.update(overrides or {})
    for name, encoding in chosen.items():
        if not is_mds_encoding(encoding):
            raise ValueError(f"Column {name!r}: unknown MDS encoding {encoding!r}.")
    parts = source.parts()
    if not parts:
        raise ConvertError(f"Nothing to convert: the input has no rows or files ({out}).")
    plan = {
        "version": 1,
        "source": source.describe(),
        "columns": chosen,
        "writer": writer_kwargs,
        "parts": [p.label for p in parts],
    }
    destination = Destination(out)
    done = destination.begin(plan)
    destination.discard_staging()
    jobs = [PartJob(source, p, chosen, out, writer_kwargs) for p in parts if p.index not in done]
    samples = run_jobs(
        jobs,
        num_workers=num_workers or default_workers(),
        start_method=start_method,
        progress=progress,
        total_parts=len(parts),
    )
    destination.finish(len(parts))
    return ConvertResult(destination.out, len(parts), len(done), samples, chosen)
