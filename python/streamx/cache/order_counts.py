"""Where a shuffle (py1e, py1s, py2s, py1br) keeps an epoch's counted draws, so that a later
start or resume of the same epoch on this node skips counting them (seconds at 10^9 samples
and more).

The files decide a worker's sample order, so they live in a directory only this user can
write: ``<local>/.streamx/order-<uid>`` under the dataset's first stream's directory, mode
0700, owned by us (checked with ``lstat``: a planted symlink or another user's directory is
refused), inside a ``.streamx`` no other user can write or rename things in. Where that
cannot be had (a read-only mirror, a directory another user controls), the user's private
root under the temp directory is used instead, and where neither can be had, none: the draws
are then counted every time. Nothing here fails a run. The Rust side checks the directory
again before reading or writing, and reads only regular files of ours.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat

from streamx.cache.cache_dir import check_cache_dir
from streamx.exceptions import UnsafeCacheDirError
from streamx.runtime.run_dirs import user_root

__all__ = ["count_cache_dir"]

logger = logging.getLogger("streamx")


def count_cache_dir(local_dir: str) -> str | None:
    """A directory private to this user for the counted draws of datasets over ``local_dir``
    (created if missing), or ``None`` where none can be had safely."""
    try:
        return _under_local(local_dir)
    except (OSError, UnsafeCacheDirError) as err:
        logger.debug("count cache not kept under %s: %s", local_dir, err)
    try:
        digest = hashlib.blake2s(os.path.abspath(local_dir).encode(), digest_size=8).hexdigest()
        base = os.path.join(user_root(), "order")
        _private_dir(base)
        return _private_dir(os.path.join(base, digest))
    except (OSError, UnsafeCacheDirError) as err:
        logger.debug("count cache not kept: %s", err)
        return None


def _under_local(local_dir: str) -> str:
    """``<local_dir>/.streamx/order-<uid>``, where no other user can replace any part of it.

    Raises:
        UnsafeCacheDirError: If another user could write into ``local_dir`` or ``.streamx``
            (renaming what we made there), or owns either.
    """
    check_cache_dir(local_dir)
    _check_guarded(local_dir, os.stat(local_dir))
    meta = os.path.join(local_dir, ".streamx")
    try:
        os.mkdir(meta, 0o755)
    except FileExistsError:
        pass
    _check_guarded(meta, os.lstat(meta))
    return _private_dir(os.path.join(meta, f"order-{os.getuid()}"))


def _check_guarded(path: str, info: os.stat_result) -> None:
    """Refuses a directory whose entries a user other than us or root could rename."""
    shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in (os.getuid(), 0) or shared:
        raise UnsafeCacheDirError(f"{path} is not a directory only this user or root can write")


def _private_dir(path: str) -> str:
    """``path`` as a directory of this user with mode 0700 (created if missing).

    Raises:
        UnsafeCacheDirError: If it is a symlink, not a directory, or another user's.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise UnsafeCacheDirError(f"{path} is not a directory of this user")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path
