"""Background uploads for dataset writers, with `index.json` always going last.

A writer hands each finished shard file to :meth:`Uploader.upload_file`, which queues it
on a thread pool; :meth:`Uploader.finish` waits for every shard and only then uploads the
index, so a reader that sees the index can find every shard it lists.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from streamx.exceptions import UploadFailedError
from streamx.storage.download import backoff_delay
from streamx.storage.filesystems import get_filesystem, split_url

__all__ = ["UploadFailedError", "Uploader", "parse_out", "put_file"]

logger = logging.getLogger(__name__)

INDEX_BASENAME = "index.json"


def put_file(fs: Any, local_path: str, path: str) -> None:
    """Copy one file up. Parent directories are made only on local filesystems: on object
    stores there are none, and s3fs would create a missing *bucket* instead of failing."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    if "file" in protocols or "local" in protocols:
        fs.makedirs(fs._parent(path), exist_ok=True)
    fs.put_file(local_path, path)


def _is_remote(url: str) -> bool:
    return split_url(url)[0] not in ("", "file")


def parse_out(out: str | tuple[str, str]) -> tuple[str, str | None, bool]:
    """Interpret a writer's `out` argument.

    Returns:
        ``(local_dir, remote_url_or_None, local_is_temporary)``: a local path has no
        remote; a remote URL gets a fresh temporary staging directory; a
        ``(local, remote)`` tuple is used as given.
    """
    if isinstance(out, (tuple, list)):
        if len(out) != 2:
            raise ValueError(f"Invalid `out` argument: {out!r}; expected (local, remote)")
        local, remote = out
        return str(local), str(remote), False
    if _is_remote(out):
        return tempfile.mkdtemp(prefix="streamx-upload-"), out, True
    return out, None, False


class Uploader:
    """Uploads files written under a local directory to `remote`, in the background.

    Args:
        out: A local directory (nothing is uploaded), a remote URL (files are staged in a
            temporary local directory), or a ``(local, remote)`` tuple.
        keep_local: Keep local files after they are uploaded. A temporary staging
            directory is removed at :meth:`finish` unless this is set.
        max_workers: Upload threads; defaults to ``min(32, cpu_count + 4)``.
        retry: Total attempts per file, with jittered exponential backoff.
        progress_bar: Show a tqdm bar counting uploaded files.
    """

    def __init__(
        self,
        out: str | tuple[str, str],
        *,
        keep_local: bool = False,
        max_workers: int | None = None,
        retry: int = 2,
        progress_bar: bool = False,
    ) -> None:
        if retry < 1:
            raise ValueError(f"num_attempts must be at-least 1, got retry={retry}")
        self.local, self.remote, self._temporary = parse_out(out)
        os.makedirs(self.local, exist_ok=True)
        self.keep_local = keep_local
        self.retry = retry
        self._failed = threading.Event()
        self._error: BaseException | None = None
        self._futures: list[Future[None]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._bar: Any = None
        if self.remote is not None:
            workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="streamx-up")
            if progress_bar:
                from tqdm import tqdm

                self._bar = tqdm(desc=f"Uploading to {self.remote}", unit="file", total=0)

    def upload_file(self, basename: str) -> None:
        """Queue `<local>/<basename>` for upload (no-op without a remote).

        Raises:
            UploadFailedError: if an earlier upload failed.
        """
        self.check()
        if self._pool is None:
            return
        if self._bar is not None:
            self._bar.total += 1
            self._bar.refresh()
        self._futures.append(self._pool.submit(self._upload_guarded, basename))

    def check(self) -> None:
        """Raise if any upload thread has failed."""
        if self._failed.is_set():
            raise UploadFailedError(
                f"One of the threads failed while uploading to {self.remote}: {self._error!r}"
            ) from self._error

    def finish(self, index_basename: str = INDEX_BASENAME) -> None:
        """Wait for every queued upload, then upload `index_basename` last and clean up.

        Raises:
            UploadFailedError: if any upload failed; nothing more is uploaded then.
        """
        try:
            wait(self._futures)
            self.check()
            if self._pool is not None and os.path.exists(os.path.join(self.local, index_basename)):
                self._upload_one(index_basename)
        finally:
            self._close()
        if self._temporary and not self.keep_local:
            shutil.rmtree(self.local, ignore_errors=True)

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _upload_guarded(self, basename: str) -> None:
        if self._failed.is_set():
            return  # another upload failed: do not spend time on a doomed dataset
        try:
            self._upload_one(basename)
        except BaseException as err:
            self._error = err
            self._failed.set()
            logger.error("upload of %s to %s failed: %r", basename, self.remote, err)
            raise

    def _upload_one(self, basename: str) -> None:
        assert self.remote is not None
        local_path = os.path.join(self.local, basename)
        remote_url = f"{self.remote.rstrip('/')}/{basename}"
        fs, path = get_filesystem(remote_url)
        for attempt in range(1, self.retry + 1):
            try:
                put_file(fs, local_path, path)
                break
            except FileNotFoundError:
                raise
            except Exception as err:
                if attempt == self.retry:
                    raise
                logger.info("upload of %s failed (%r); retrying", remote_url, err)
                time.sleep(backoff_delay(attempt))
        if not self.keep_local:
            os.remove(local_path)
        if self._bar is not None:
            self._bar.update(1)

    def __enter__(self) -> Uploader:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.finish()
        else:
            self._close()
