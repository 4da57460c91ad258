"""What every writer shares: argument checks, shard naming, the index, and uploads."""

from __future__ import annotations

import json
import logging
import os
import textwrap
import threading
import warnings
from collections.abc import Iterable
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar

from streamx import _core
from streamx.exceptions import StreamxError, UploadFailedError
from streamx.format.writers.output import open_output
from streamx.location import INDEX_BASENAME
from streamx.runtime.atomic_write import write_atomic  # re-exported: the writers import it here
from streamx.sizes import bytes_to_int

__all__ = [
    "ColumnOverflowError",
    "MissingColumnError",
    "Writer",
    "column_value",
    "fill_writer_args",
    "raise_if_missing",
    "write_atomic",
]


class MissingColumnError(StreamxError, KeyError):
    """A sample lacks one of the writer's columns (a ``KeyError``, as mosaicml-streaming
    raises); the message names the columns and, where known, the sample."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ColumnOverflowError(StreamxError, OverflowError):
    """A number outside its column's range (an ``OverflowError``, as mosaicml-streaming
    raises); the message names the column and the sample."""


def raise_if_missing(sample: dict[str, Any], columns: Iterable[str], at: int | None) -> None:
    """Raises :class:`MissingColumnError` when ``sample`` lacks any of ``columns``."""
    names = list(columns)
    missing = [name for name in names if name not in sample]
    if missing:
        which = "A sample" if at is None else f"Sample {at}"
        raise MissingColumnError(
            f"{which} lacks column(s) {missing}; the writer's columns are {names} and the "
            f"sample has {sorted(sample, key=str)}."
        )


def column_value(sample: dict[str, Any], name: str, columns: Iterable[str]) -> Any:
    """``sample[name]``, or :class:`MissingColumnError` naming what is missing."""
    try:
        return sample[name]
    except KeyError:
        raise_if_missing(sample, columns, None)
        raise


logger = logging.getLogger(__name__)
W = TypeVar("W", bound=type)


def parse_size_limit(size_limit: int | str | None) -> int | None:
    """Validates ``size_limit``: ``None``/0 means one shard; offsets are u32, so < 2**32."""
    if not size_limit:
        return None
    value = bytes_to_int(size_limit)
    if value < 0:
        raise ValueError(f"`size_limit` must be greater than zero, instead, found as {value}.")
    if value >= 2**32:
        raise ValueError(
            f"`size_limit` must be less than 2**32, instead, found as {value}. This is because "
            "sample byte offsets are stored with uint32."
        )
    return value


# The arguments every writer takes, documented once; `document_writer_args` puts them into
# each writer's docstring where it says `<writer arguments>`.
WRITER_ARGS_DOC = """
        out: Where the dataset goes: a local directory, a remote URL (files are staged
            in a temporary directory and uploaded), or a ``(local, remote)`` pair.
        keep_local: With a remote, keep the local files after uploading them.
        compression: ``None``, or a codec with an optional level, e.g. ``'zstd:7'``.
        hashes: Hash algorithm names (sorted, unique) whose digests are recorded for
            every shard file, e.g. ``['sha1', 'xxh64']``.
        size_limit: Shard size limit in bytes, or a string such as ``'64mb'``; ``None``
            or 0 writes a single shard. Must be below 2**32.
        progress_bar: Show a progress bar for uploads.
        max_workers: Upload threads; ``None`` lets the pool choose.
        retry: Attempts per upload after the first fails.
        exist_ok: Clear a non-empty local directory instead of raising.
        **kwargs: Any other keyword is rejected with ``ValueError``, as mosaicml-streaming
            does."""


WRITER_ARGS_MARKER = "<writer arguments>"


def fill_writer_args(doc: str) -> str:
    """Replaces each line of ``doc`` that says ``<writer arguments>`` with the shared
    argument docs, indented as that line is.

    Serves both the raw ``__doc__`` (:func:`document_writer_args`) and the dedented
    docstrings the API reference's griffe extension (``docs/griffe_writer_args.py``) sees.

    Args:
        doc: A docstring, raw or dedented.

    Returns:
        ``doc`` with the marker lines filled in (unchanged when it has none).

    Examples:
        >>> doc = fill_writer_args("Args:\n    <writer arguments>")
        >>> doc.splitlines()[1]
        '    out: Where the dataset goes: a local directory, a remote URL (files are staged'
    """
    if WRITER_ARGS_MARKER not in doc:
        return doc
    args = textwrap.dedent(WRITER_ARGS_DOC.strip("\n"))
    lines = []
    for line in doc.split("\n"):
        if line.strip() == WRITER_ARGS_MARKER:
            line = textwrap.indent(args, line[: len(line) - len(line.lstrip())])
        lines.append(line)
    return "\n".join(lines)


def document_writer_args(cls: W) -> W:
    """Puts the shared argument docs where ``cls``'s docstring says ``<writer arguments>``."""
    if cls.__doc__:
        cls.__doc__ = fill_writer_args(cls.__doc__)
    return cls


@document_writer_args
class Writer:
    """Base of every dataset writer. Use as a context manager, or call :meth:`finish`.

    Subclasses encode samples (:meth:`encode_sample`) and write shards
    (:meth:`flush_shard`); this class validates the shared arguments, keeps the index and
    hands finished files to the uploader. Every writer takes these keyword arguments.

    Args:
        <writer arguments>

    Raises:
        ValueError: For an invalid compression, hash list, size limit, ``out`` tuple or
            unknown keyword.
        FileExistsError: If the local directory is not empty and ``exist_ok`` is false.
    """

    format: str = ""

    def __init__(
        self,
        *,
        out: str | tuple[str, str],
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: int | str | None = 1 << 26,
        progress_bar: bool = False,
        max_workers: int | None = None,
        retry: int = 2,
        exist_ok: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise ValueError(f"Invalid Writer argument(s): {list(kwargs)} ")
        compression = compression or None
        if compression and not _core.is_compression(compression):
            raise ValueError(f"Invalid compression: {compression}.")
        hashes = list(hashes or [])
        if hashes != sorted(set(hashes)):
            raise ValueError("Hashes must be unique and in sorted order.")
        known_hashes = set(_core.hash_names())
        for algo in hashes:
            if algo not in known_hashes:
                raise ValueError(f"Invalid hash: {algo}.")
        self.size_limit = parse_size_limit(size_limit)
        self.keep_local = keep_local
        self.compression = compression
        self.hashes = hashes
        self.shards: list[dict[str, Any]] = []
        # Set by exception_callback when a background job fails (mosaicml-streaming's name).
        self.event = threading.Event()
        self._finished = False
        self._unknown_keys_warned = False
        self._output = open_output(
            out,
            keep_local=keep_local,
            exist_ok=exist_ok,
            progress_bar=progress_bar,
            max_workers=max_workers,
            retry=retry,
        )
        self.local: str = self._output.local
        self.remote: str | None = self._output.remote
        self._reset_cache()

    def _reset_cache(self) -> None:
        """Starts an empty pending shard (writers that buffer samples in Python)."""

    def get_config(self) -> dict[str, Any]:
        """Returns the writer settings recorded in every shard entry."""
        return {
            "version": 2,
            "format": self.format,
            "compression": self.compression,
            "hashes": self.hashes,
            "size_limit": self.size_limit,
        }

    def write(self, sample: dict[str, Any]) -> None:
        """Adds one sample, starting a new shard when the size limit would be crossed.

        Args:
            sample: Column name to value. Keys beyond the writer's columns are dropped
                (a warning names them, once per writer).

        Raises:
            KeyError: If a column is missing from ``sample``.
            ColumnTypeError: If a value's type does not fit its column's encoding.
            ColumnValueError: If a value's type fits but its content cannot be stored.
            UploadFailedError: If an earlier background upload failed.
        """
        raise NotImplementedError

    def flush_shard(self) -> None:
        """Writes the samples added since the last shard as a shard now, and queues its
        upload. Does nothing when no sample is pending."""
        raise NotImplementedError

    def _complete_shards(self) -> None:
        """Waits until every shard is on disk (writers that finish shards in the background)."""

    def _check_jobs(self) -> None:
        """Raises, after cancelling queued uploads, once a background job has failed."""
        if self.event.is_set():
            self.cancel_future_jobs()
            raise UploadFailedError(
                "One of the threads failed. Check other traceback for more details."
            )

    def _warn_unknown_keys(self, sample: dict[str, Any], columns: Iterable[str]) -> None:
        """Warns once per writer about sample keys that are not columns (they are dropped)."""
        if self._unknown_keys_warned:
            return
        unknown = sorted(set(sample) - set(columns), key=str)
        if unknown:
            self._unknown_keys_warned = True
            warnings.warn(
                f"{type(self).__name__} ignores sample keys that are not columns: {unknown}",
                UserWarning,
                stacklevel=3,
            )

    def cancel_future_jobs(self) -> None:
        """Cancels the uploads still queued; the files stay in the local directory."""
        self._output.cancel()

    def exception_callback(self, future: Future[Any]) -> None:
        """Done-callback for background jobs: a failure is logged and marks the writer, so
        the next :meth:`write` or :meth:`finish` raises ``UploadFailedError``.

        Args:
            future: The finished job.
        """
        error = future.exception()
        if error is not None:
            self.event.set()
            logger.error("Exception in writer thread: %s", error)

    def _add_shard(self, entry: dict[str, Any], basenames: list[str]) -> None:
        self.shards.append(entry)
        for basename in basenames:
            self._output.upload(basename)

    def _write_index(self) -> None:
        text = json.dumps({"version": 2, "shards": self.shards}, sort_keys=True)
        write_atomic(os.path.join(self.local, INDEX_BASENAME), text.encode("utf-8"))

    def finish(self) -> None:
        """Writes the last shard and the index, and waits for uploads (index last).

        Raises:
            UploadFailedError: If a background upload failed.
            OSError: If writing a shard in the background failed; the index is then not
                written.
        """
        if self._finished:
            return
        self._finished = True
        try:
            self._check_jobs()
            self.flush_shard()
            self._complete_shards()
            self._write_index()
        except BaseException:
            self._output.cancel()
            raise
        self._output.finish(INDEX_BASENAME)

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # As with mosaicml-streaming, what was written before an error is kept: the index
        # is written for the shards so far, so nothing the user wrote is lost.
        if exc_type is None:
            self.finish()
            return
        try:
            self.finish()
        except Exception as err:  # the caller's exception matters more; keep it primary
            warnings.warn(f"Could not finish {self.local} after an error: {err}", stacklevel=2)
