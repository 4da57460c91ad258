"""Where a writer's files go: a local directory, optionally mirrored to a remote."""

from __future__ import annotations

import os
import shutil
from typing import Any, Protocol

from streamx.location import OutputPair, parse_out

__all__ = ["LocalOutput", "Output", "open_output", "split_out"]


class Output(Protocol):
    """The writer's view of its destination."""

    local: str
    remote: str | None

    def upload(self, basename: str) -> None:
        """Schedules ``local/basename`` for upload (no-op for local-only output)."""

    def finish(self, index_basename: str) -> None:
        """Waits for every upload, then uploads the index last."""

    def cancel(self) -> None:
        """Abandons pending uploads after a failure."""


def split_out(out: str | tuple[str, str]) -> tuple[str | None, str | None]:
    """Returns ``(local, remote)`` for a writer's ``out`` argument (``file://`` is local).

    Raises:
        ValueError: If ``out`` is a tuple of the wrong length.
    """
    pair = parse_out(out)
    return pair.local, None if pair.remote is None else pair.remote.url


class LocalOutput:
    """Files stay in a local directory; nothing is uploaded."""

    def __init__(self, local: str) -> None:
        self.local = local
        self.remote: str | None = None
        os.makedirs(local, exist_ok=True)

    def upload(self, basename: str) -> None:
        """Nothing to do: the file is already in place."""

    def finish(self, index_basename: str) -> None:
        """Nothing to do: the index is already in place."""

    def cancel(self) -> None:
        """Nothing to cancel."""


def open_output(
    out: str | tuple[str, str],
    *,
    keep_local: bool,
    exist_ok: bool,
    progress_bar: bool,
    max_workers: int | None,
    retry: int,
) -> Any:
    """Prepares the destination of a writer.

    The local directory must be empty unless ``exist_ok``, in which case it is cleared.

    Raises:
        FileExistsError: If the local directory is not empty and ``exist_ok`` is false.
    """
    pair = parse_out(out)
    local = pair.local
    if local is not None and os.path.isdir(local) and os.listdir(local):
        if not exist_ok:
            raise FileExistsError(f"Directory is not empty: {local}")
        shutil.rmtree(local)
    if pair.remote is None:
        assert local is not None
        return LocalOutput(local)
    return RemoteOutput(
        pair, keep_local=keep_local, progress_bar=progress_bar, max_workers=max_workers, retry=retry
    )


class RemoteOutput:
    """Files are written locally and uploaded in the background; the index goes last."""

    def __init__(self, out: OutputPair, **kwargs: Any) -> None:
        # The one arrow from format/ down to storage/ (format sits above storage): uploads
        # are transport, started only for a remote ``out``.
        from streamx.storage.upload import Uploader

        self._uploader = Uploader(out, **kwargs)
        self.local: str = self._uploader.local
        self.remote: str | None = self._uploader.remote

    def upload(self, basename: str) -> None:
        """Queues one finished file; raises if an earlier upload failed."""
        self._uploader.upload_file(basename)

    def finish(self, index_basename: str) -> None:
        """Waits for the shards, then uploads the index."""
        self._uploader.finish(index_basename)

    def cancel(self) -> None:
        """Stops uploading after a failure; what is local stays local."""
        self._uploader.abandon()
