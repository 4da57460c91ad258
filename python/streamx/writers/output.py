"""Where a writer's files go: a local directory, optionally mirrored to a remote."""

from __future__ import annotations

import os
import shutil
import urllib.parse
from typing import Any, Protocol

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
    """Returns ``(local, remote)`` for a writer's ``out`` argument.

    Raises:
        ValueError: If ``out`` is a tuple of the wrong length.
    """
    if isinstance(out, str):
        if urllib.parse.urlparse(out).scheme:
            return None, out
        return os.path.expanduser(out), None
    if len(out) != 2:
        raise ValueError(
            "Invalid `out` argument. It is either a string of local/remote directory or a "
            "list of two strings with [local, remote]."
        )
    return os.path.expanduser(out[0]), out[1]


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
    local, remote = split_out(out)
    if local is not None and os.path.isdir(local) and os.listdir(local):
        if not exist_ok:
            raise FileExistsError(f"Directory is not empty: {local}")
        shutil.rmtree(local)
    if remote is None:
        assert local is not None
        return LocalOutput(local)
    from streamx.storage.upload import Uploader

    return Uploader(
        out,
        keep_local=keep_local,
        progress_bar=progress_bar,
        max_workers=max_workers,
        retry=retry,
    )
