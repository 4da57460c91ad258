"""Background uploads for dataset writers, with `index.json` always going last.

A writer hands each finished shard file to :meth:`Uploader.upload_file`, which queues it
on a thread pool; :meth:`Uploader.finish` waits for every shard and only then uploads the
index, so a reader that sees the index can find every shard it lists.

Each file goes up through :func:`upload_file`: to S3 as one signed PUT when the
configuration allows it (``s3_put``; no s3fs or botocore involved), otherwise through fsspec.
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
from streamx.location import INDEX_BASENAME, Location, OutputPair
from streamx.location import parse_out as parse_location_out
from streamx.storage import s3_put
from streamx.storage.download import backoff_delay
from streamx.storage.filesystems import get_filesystem
from streamx.storage.s3fs_check import require_s3fs
from streamx.storage.staging import Staging, collect_dead_staging

__all__ = ["UploadFailedError", "Uploader", "parse_out", "put_file", "upload_file"]

logger = logging.getLogger(__name__)


def put_file(fs: Any, local_path: str, path: str) -> None:
    """Copy one file up. Parent directories are made only on local filesystems: on object
    stores there are none, and s3fs would create a missing *bucket* instead of failing."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    if "file" in protocols or "local" in protocols:
        fs.makedirs(fs._parent(path), exist_ok=True)
    fs.put_file(local_path, path)


def upload_file(local_path: str, remote_url: str, *, retry: int = 2, timeout: float = 60.0) -> None:
    """Upload one file, with retries; the local file is left in place.

    Args:
        local_path: The file to send.
        remote_url: Its destination: ``s3://bucket/key``, any URL
            :func:`~streamx.storage.filesystems.get_filesystem` accepts, or a local path.
        retry: Total attempts (at least 1), with jittered exponential backoff between them.
        timeout: Seconds any one socket operation of a direct S3 PUT may block.

    Raises:
        FileNotFoundError: if `local_path` is missing (not retried).
        ImportError: if the destination needs an fsspec package that is missing or too old.
        UploadFailedError: the last attempt's error, when it does not name `remote_url`.
        OSError: the last attempt's error otherwise.

    Examples:
        >>> import os, tempfile
        >>> src, dst = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> _ = open(os.path.join(src, "a.bin"), "wb").write(b"abc")
        >>> upload_file(os.path.join(src, "a.bin"), os.path.join(dst, "sub", "a.bin"))
        >>> open(os.path.join(dst, "sub", "a.bin"), "rb").read()
        b'abc'
    """
    if retry < 1:
        raise ValueError(f"num_attempts must be at-least 1, got retry={retry}")
    route = s3_put.put_route(remote_url, os.path.getsize(local_path))
    for attempt in range(1, retry + 1):
        try:
            if route is not None:
                s3_put.put_file(route, local_path, timeout)
            else:
                if Location.parse(remote_url).scheme == "s3":
                    require_s3fs()
                fs, path = get_filesystem(remote_url)
                put_file(fs, local_path, path)
            return
        except (FileNotFoundError, ImportError):
            raise  # a missing file or bucket, a missing package: no attempt can succeed
        except Exception as err:
            if attempt == retry:
                if remote_url in str(err):
                    raise
                # A transport error that names a host, not the object (a DNS failure, a
                # reset): say which file went where.
                raise UploadFailedError(
                    f"Upload of {local_path} to {remote_url} failed after {retry} attempt(s): "
                    f"{type(err).__name__}: {err}"
                ) from err
            logger.info("upload of %s failed (%r); retrying", remote_url, err)
            time.sleep(backoff_delay(attempt))


def parse_out(out: str | tuple[str, str] | OutputPair) -> tuple[str, str | None, bool]:
    """Interpret a writer's `out` argument (see :func:`streamx.location.parse_out`).

    Returns:
        ``(local_dir, remote_url_or_None, local_is_temporary)``: a local path or ``file://``
        URL has no remote; a remote URL gets a fresh temporary staging directory; a
        ``(local, remote)`` tuple is used as given.
    """
    pair = out if isinstance(out, OutputPair) else parse_location_out(out)
    remote = None if pair.remote is None else pair.remote.url
    if pair.local is None:
        return tempfile.mkdtemp(prefix="streamx-upload-"), remote, True
    return pair.local, remote, False


class Uploader:
    """Uploads files written under a local directory to `remote`, in the background.

    Args:
        out: A local directory (nothing is uploaded), a remote URL (files are staged in a
            temporary local directory), or a ``(local, remote)`` tuple.
        keep_local: Keep local files after they are uploaded. A temporary staging
            directory is removed at :meth:`finish` unless this is set.
        max_workers: Upload threads; defaults to ``min(32, cpu_count + 4)``.
        retry: Total attempts per file, with jittered exponential backoff.
        progress_bar: Show a tqdm bar of the bytes uploaded; its total grows as files are
            queued, so it never runs past it.

    Raises:
        ValueError: if `retry` < 1 or `out` is a malformed tuple.
        ImportError: if `out` is an ``s3://`` URL that the direct route cannot serve and
            s3fs is missing or too old to work.

    Examples:
        >>> import os, tempfile
        >>> local, remote = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> with Uploader((local, remote)) as up:
        ...     _ = open(os.path.join(local, "shard.00000.mds"), "wb").write(b"x" * 10)
        ...     up.upload_file("shard.00000.mds")
        >>> os.listdir(remote)
        ['shard.00000.mds']
    """

    def __init__(
        self,
        out: str | tuple[str, str] | OutputPair,
        *,
        keep_local: bool = False,
        max_workers: int | None = None,
        retry: int = 2,
        progress_bar: bool = False,
    ) -> None:
        if retry < 1:
            raise ValueError(f"num_attempts must be at-least 1, got retry={retry}")
        pair = out if isinstance(out, OutputPair) else parse_location_out(out)
        self._staging: Staging | None = None
        self.remote: str | None
        if pair.local is None and pair.remote is not None:
            # Remote-only: stage in a locked temporary directory, after collecting what
            # writers to the same remote killed earlier left behind.
            collect_dead_staging(pair.remote.url)
            self._staging = Staging(pair.remote.url)
            self.local, self.remote, self._temporary = self._staging.path, pair.remote.url, True
        else:
            self.local, self.remote, self._temporary = parse_out(pair)
        os.makedirs(self.local, exist_ok=True)
        self.keep_local = keep_local
        self.retry = retry
        self._failed = threading.Event()
        self._error: BaseException | None = None
        self._failed_file = ""
        self._futures: list[Future[None]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._bar: Any = None
        self._bar_lock = threading.Lock()
        if self.remote is not None:
            direct = s3_put.put_route(self._remote_url(INDEX_BASENAME), 0) is not None
            if not direct and Location.parse(self.remote).scheme == "s3":
                require_s3fs()  # fail now, not on the first shard's upload
            workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="streamx-up")
            if progress_bar:
                from tqdm import tqdm

                self._bar = tqdm(
                    desc=f"Uploading to {self.remote}", unit="B", unit_scale=True, total=0
                )

    def upload_file(self, basename: str) -> None:
        """Queue `<local>/<basename>` for upload (no-op without a remote).

        Raises:
            UploadFailedError: if an earlier upload failed.
        """
        self.check()
        if self._pool is None:
            return
        self._count(basename)
        self._futures.append(self._pool.submit(self._upload_guarded, basename))

    def _count(self, basename: str) -> None:
        """Add a queued file's size to the bar's total, before any of its bytes count."""
        if self._bar is not None:
            size = os.path.getsize(os.path.join(self.local, basename))
            with self._bar_lock:
                self._bar.total += size
                self._bar.refresh()

    def check(self) -> None:
        """Raise if any upload thread has failed."""
        if self._failed.is_set():
            raise UploadFailedError(
                f"One of the threads failed while uploading to {self.remote}"
                f"{f' ({self._failed_file})' if self._failed_file else ''}: {self._error!r}"
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
                self._count(index_basename)
                self._upload_one(index_basename)
        finally:
            self._close()
        if self._staging is not None:
            self._staging.release()  # finished: a kept directory is the user's now
        if self._temporary and not self.keep_local:
            shutil.rmtree(self.local, ignore_errors=True)

    def abandon(self) -> None:
        """Stop after a failure: pending uploads are cancelled, local files stay. A staging
        directory stays marked, so once this process is gone the next writer to the same
        remote (or ``streamx cache clean``) collects it."""
        self.keep_local = True
        self._close()

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
            self._failed_file = os.path.join(self.local, basename)
            self._failed.set()
            logger.error("upload of %s to %s failed: %r", basename, self.remote, err)
            raise

    def _remote_url(self, basename: str) -> str:
        assert self.remote is not None
        return f"{self.remote.rstrip('/')}/{basename}"

    def _upload_one(self, basename: str) -> None:
        local_path = os.path.join(self.local, basename)
        size = os.path.getsize(local_path)
        upload_file(local_path, self._remote_url(basename), retry=self.retry)
        if not self.keep_local:
            os.remove(local_path)
        if self._bar is not None:
            with self._bar_lock:
                self._bar.update(size)

    def __enter__(self) -> Uploader:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.finish()
        else:
            self._close()
