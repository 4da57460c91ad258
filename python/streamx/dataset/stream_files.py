"""Making a stream's shard files ready to read: download, check, decompress.

``Stream`` keeps the hooks mosaicml-streaming's subclasses override (``_download_file``,
``_decompress_shard_part``, ``_prepare_shard_part``, ``prepare_shard``); what runs between
them lives here. The index's sizes, a digest already checked and a decompressor following a
download reach the hooks through context variables rather than extra arguments, so a
subclass overriding a hook with mosaic's signature keeps working: the index's size still
reaches the download (parallel ranged GETs, stale-index checks) and bounds the
decompression, whoever's hook is in between.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping

from streamx import _core
from streamx.cache import cached_files
from streamx.dataset.remote_copy import raise_if_remote_copy_bad
from streamx.dataset.stream_hooks import StreamHooks
from streamx.exceptions import SizeMismatchError, StaleIndexError
from streamx.format.index import FileInfo
from streamx.storage.download import Progress

__all__ = ["FOLLOWER", "VERIFIED", "listed", "listed_size", "prepare_listed"]

# The sizes the cached index gives the files being prepared, by basename.
_LISTED: contextvars.ContextVar[Mapping[str, int] | None] = contextvars.ContextVar(
    "streamx_listed_sizes", default=None
)
# The compressed file whose digest was checked before it took its name, so that the
# decompression hook does not hash it a second time.
VERIFIED: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "streamx_verified_zip", default=None
)
# Who follows the download of the file being fetched (a decompressor), if anyone.
FOLLOWER: contextvars.ContextVar[Progress | None] = contextvars.ContextVar(
    "streamx_download_follower", default=None
)


@contextlib.contextmanager
def listed(*infos: FileInfo | None) -> Iterator[None]:
    """Makes the index's sizes of ``infos`` known to the hooks called within."""
    token = _LISTED.set({i.basename: i.bytes for i in infos if i is not None})
    try:
        yield
    finally:
        _LISTED.reset(token)


def listed_size(basename: str) -> int | None:
    """The index's size of a file being prepared, if known."""
    sizes = _LISTED.get()
    return None if sizes is None else sizes.get(basename)


def prepare_listed(
    stream: StreamHooks,
    raw_info: FileInfo,
    zip_info: FileInfo | None,
    compression: str | None,
    *,
    overlap: bool,
) -> int:
    """``Stream._prepare_shard_part`` within :func:`listed`: downloads, checks and
    decompresses one file of a shard. ``overlap``: whether a compressed file may be
    decompressed while it downloads.

    Returns:
        The change in cache usage, in bytes as the index gives them.
    """
    raw_filename = os.path.join(stream.local, stream.split, raw_info.basename)
    if zip_info is None:
        if os.path.isfile(raw_filename):
            return 0
        if stream.validate_hash:
            _fetch_verified(stream, raw_info, raw_filename)
        else:
            _fetch_listed(stream, raw_info)
        return raw_info.bytes
    zip_filename = os.path.join(stream.local, stream.split, zip_info.basename)
    if os.path.isfile(raw_filename):
        if stream.safe_keep_zip:
            return 0
        return -cached_files.remove_counted(zip_info, zip_filename, stream.local)
    delta, decompressed, verified = 0, False, None
    source, staged = zip_filename, False
    if not os.path.isfile(zip_filename):
        # The compressed file keeps a staging name until its raw file is in place: a
        # compressed file found under its own name is one at rest, never one this download
        # holds (readers decompress what they find, outside the download's reservation).
        staging = cached_files.staging_name(zip_info.basename)
        if stream.validate_hash:
            source = _fetch_listed(stream, zip_info, staging)
            _check_staged(stream, zip_info, source, zip_filename)
            verified = source
        elif overlap and compression is not None and _core.GrowingDecompressor.streams(compression):
            source = _fetch_decompressing(stream, zip_info, staging, raw_filename, compression)
            decompressed = True
        else:
            source = _fetch_listed(stream, zip_info, staging)
        # A subclass's download hook may ignore the staging name and write the file itself.
        staged = os.path.abspath(source) != os.path.abspath(zip_filename)
        delta += zip_info.bytes
    try:
        if not decompressed:
            token = VERIFIED.set(verified)
            try:
                stream._decompress_shard_part(zip_info, source, raw_filename, compression)
            finally:
                VERIFIED.reset(token)
        cached_files.check_size(raw_info, raw_filename)  # a rewritten zip of the same size
        if staged and stream.safe_keep_zip and os.path.isfile(source):
            os.replace(source, zip_filename)
        elif decompressed and not staged and not stream.safe_keep_zip:
            os.remove(zip_filename)
    finally:
        if staged:
            with contextlib.suppress(FileNotFoundError):
                os.remove(source)
    delta += raw_info.bytes
    return delta if stream.safe_keep_zip else delta - zip_info.bytes


def _check_staged(stream: StreamHooks, info: FileInfo, got: str, path: str) -> None:
    """Checks the digest of a compressed file downloaded to ``got`` (named ``path`` in
    errors), removing it on a mismatch."""
    try:
        cached_files.check_hash(stream.validate_hash, info, got, named=path)
    except BaseException:
        if os.path.abspath(got) != os.path.abspath(path):
            with contextlib.suppress(FileNotFoundError):
                os.remove(got)
        raise


def _fetch_decompressing(
    stream: StreamHooks, zip_info: FileInfo, to_basename: str, raw_filename: str, compression: str
) -> str:
    """Downloads a compressed shard file (to ``to_basename``) while a Rust thread
    decompresses the part of it that is complete, so the raw file is ready soon after the
    last byte arrives. Returns the compressed file's local path."""
    max_bytes = listed_size(os.path.basename(raw_filename))
    job = _core.GrowingDecompressor(compression, raw_filename, max_bytes)
    token = FOLLOWER.set(job.advance)
    try:
        got = _fetch_listed(stream, zip_info, to_basename)
    except BaseException:
        job.abort()
        raise
    finally:
        FOLLOWER.reset(token)
    try:
        job.finish(got, zip_info.bytes)
    except BaseException:
        if os.path.basename(got) == os.path.basename(to_basename):  # staged: not kept
            with contextlib.suppress(FileNotFoundError):
                os.remove(got)
        raise
    return got


def _fetch_verified(stream: StreamHooks, info: FileInfo, path: str) -> None:
    """Downloads a shard file under a staging name and gives it its name ``path`` only once
    its digest matches: readers find a shard file (raw, or compressed to decompress) by its
    name, so a file checked in place could be read by another thread or process before a
    mismatch removed it."""
    staging = cached_files.staging_name(info.basename)
    got = _fetch_listed(stream, info, staging)
    # A subclass's download hook may ignore the staging name and write `path` itself.
    staged = os.path.abspath(got) != os.path.abspath(path)
    try:
        cached_files.check_hash(stream.validate_hash, info, got, named=path)
        if staged:
            os.replace(got, path)
    except BaseException:
        if staged:
            with contextlib.suppress(FileNotFoundError):
                os.remove(got)
        raise


def _fetch_listed(stream: StreamHooks, info: FileInfo, to_basename: str | None = None) -> str:
    """Downloads a file the cached index lists (to ``to_basename`` if given) and checks its
    size against the index. Returns the local path written."""
    try:
        with listed(info):
            got = stream._download_file(info.basename, to_basename)
    except SizeMismatchError as err:
        raise_if_remote_copy_bad(stream, info, err.size, err)
        cached_files.stale_size(info, stream.index_path, err.size, err)
    except FileNotFoundError as err:
        if stream.remote is None:
            raise
        raise FileNotFoundError(
            f"No such remote file: {err} (listed by the cached {stream.index_path}: "
            "if the dataset was rewritten on the remote, that index.json is stale; delete "
            f"{os.path.dirname(stream.index_path)} or use a fresh `local` directory)"
        ) from err
    size = os.path.getsize(got)
    try:
        cached_files.check_size(info, got)
    except StaleIndexError as err:
        raise_if_remote_copy_bad(stream, info, size, err)
        raise
    return got
