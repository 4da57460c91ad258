"""What every writer shares: argument checks, shard naming, the index, and uploads."""

from __future__ import annotations

import json
import os
import warnings
from types import TracebackType
from typing import Any, TypedDict

from streamx import _core
from streamx.format.writers.output import open_output
from streamx.sizes import bytes_to_int

__all__ = ["Writer", "WriterOptions", "write_atomic"]

_ALLOWED_KWARGS = ("progress_bar", "max_workers", "retry", "exist_ok")
INDEX_BASENAME = "index.json"


def write_atomic(path: str, data: bytes) -> None:
    """Writes ``data`` to a temporary file beside ``path``, then renames it into place."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as file:
        file.write(data)
    os.replace(tmp, path)


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


class _WriterOut(TypedDict):
    out: str | tuple[str, str]


class WriterOptions(_WriterOut, total=False):
    """The keyword arguments every writer passes on to :class:`Writer`."""

    keep_local: bool
    compression: str | None
    hashes: list[str] | None
    size_limit: int | str | None
    progress_bar: bool
    max_workers: int | None
    retry: int
    exist_ok: bool


class Writer:
    """Base of every dataset writer. Use as a context manager, or call :meth:`finish`.

    Args:
        out: A local directory, a remote URL (staged in a temporary directory), or a
            ``(local, remote)`` tuple.
        keep_local: After uploading, keep the local files.
        compression: ``None`` or a codec with optional level, e.g. ``'zstd:7'``.
        hashes: Sorted hash algorithm names to record for every shard file.
        size_limit: Shard size limit in bytes, or a string such as ``'64mb'``. ``None``
            puts everything in one shard.
        **kwargs: ``progress_bar``, ``max_workers``, ``retry`` and ``exist_ok``.
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
        **kwargs: Any,
    ) -> None:
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
        invalid = [key for key in kwargs if key not in _ALLOWED_KWARGS]
        if invalid:
            raise ValueError(f"Invalid Writer argument(s): {invalid} ")
        self.keep_local = keep_local
        self.compression = compression
        self.hashes = hashes
        self.shards: list[dict[str, Any]] = []
        self._finished = False
        self._output = open_output(
            out,
            keep_local=keep_local,
            exist_ok=kwargs.get("exist_ok", False),
            progress_bar=kwargs.get("progress_bar", False),
            max_workers=kwargs.get("max_workers"),
            retry=kwargs.get("retry", 2),
        )
        self.local: str = self._output.local
        self.remote: str | None = self._output.remote

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
        """Adds one sample, starting a new shard when the size limit would be crossed."""
        raise NotImplementedError

    def _flush(self) -> None:
        """Writes out the pending shard, if it holds samples."""
        raise NotImplementedError

    def _add_shard(self, entry: dict[str, Any], basenames: list[str]) -> None:
        self.shards.append(entry)
        for basename in basenames:
            self._output.upload(basename)

    def _write_index(self) -> None:
        text = json.dumps({"version": 2, "shards": self.shards}, sort_keys=True)
        write_atomic(os.path.join(self.local, INDEX_BASENAME), text.encode("utf-8"))

    def finish(self) -> None:
        """Writes the last shard and the index, and waits for uploads (index last)."""
        if self._finished:
            return
        self._finished = True
        try:
            self._flush()
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
