"""Which local cache directories streamx will write into, on a machine shared with others.

A cache directory decides what a reader reads and which files streamx may delete, so one
that another local user controls is refused rather than used:

- ``local=None`` caches under ``<tempdir>/streamx-<uid>/local/<digest of the remote>``,
  private to this user (0700, owned by us, checked with ``lstat`` so no planted symlink is
  followed), never under a predictable ``<tempdir>/<digest>`` anyone could create first;
- a given ``local`` must not be writable by everyone unless sticky (like ``/tmp``), and must
  be owned by this user or by root (the rule ``ssh`` applies to its own files).

A cache this process may not write into is still usable read-only when it is complete
(a shared mirror): see :func:`writable`. A mirror another user (not root) owns is refused
unless ``STREAMX_TRUSTED_CACHE_OWNERS`` names that user.
"""

from __future__ import annotations

import errno
import hashlib
import os
import pwd
import stat

from streamx.cache.local_claims import tie_to_remote
from streamx.exceptions import UnsafeCacheDirError
from streamx.runtime.run_dirs import user_root

__all__ = ["check_cache_dir", "prepare", "private_default_dir", "writable"]


def private_default_dir(remote: str | None, split: str) -> str:
    """The cache directory of a stream given no ``local``: private to this user.

    Args:
        remote: The stream's remote (its digest names the directory).
        split: The stream's split, a sub-directory.

    Examples:
        >>> private_default_dir("s3://bucket/ds", "").endswith("ds") # doctest: +SKIP
    """
    digest = ""
    if remote is not None:
        digest = hashlib.blake2s(remote.encode("utf-8"), digest_size=16).hexdigest()
    base = os.path.join(user_root(), "local")
    _make_private(base)
    return os.path.join(base, digest, split)


def _make_private(path: str) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise UnsafeCacheDirError(
            f"{path} should be a directory private to this user, but it is not (a symlink, "
            "or owned by someone else): refusing to cache there"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)


def check_cache_dir(path: str) -> None:
    """Refuses a cache directory another local user could have planted or could write into.

    Args:
        path: An existing directory.

    Raises:
        UnsafeCacheDirError: If the directory is writable by every user and not sticky, or
            owned by a user other than this one and root.

    Examples:
        >>> check_cache_dir("/tmp")  # sticky: fine
    """
    info = os.stat(path)
    mode = info.st_mode
    if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
        raise UnsafeCacheDirError(
            f"Cache directory {path} is writable by every user and not sticky (mode "
            f"{stat.S_IMODE(mode):o}): another user could plant shards or an index there. "
            "Use a directory only you can write (chmod o-w, or chmod +t)."
        )
    if info.st_uid not in (os.getuid(), 0):
        raise UnsafeCacheDirError(
            f"Cache directory {path} is owned by uid {info.st_uid}, not by this user "
            f"({os.getuid()}) or root: its owner controls what is read from it. Use a "
            "directory of your own as `local`."
        )


def writable(path: str) -> bool:
    """Whether this process can create files in ``path`` (a read-only mirror cannot)."""
    probe = os.path.join(path, f".streamx-probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return False
        raise
    os.close(fd)
    os.remove(probe)
    return True


def prepare(path: str, remote: str) -> None:
    """Creates a stream's cache directory if needed, checks it, and ties it to ``remote``.

    Args:
        path: The stream's ``local/split``.
        remote: The remote it caches (normalized, as the claims spell it).

    Raises:
        UnsafeCacheDirError: See :func:`check_cache_dir`; a read-only mirror may belong to
            this user, root, or a user named in ``STREAMX_TRUSTED_CACHE_OWNERS``.
        ValueError: If the directory caches another remote (see
            :func:`~streamx.cache.local_claims.tie_to_remote`).
    """
    os.makedirs(path, exist_ok=True)
    try:
        check_cache_dir(path)
    except UnsafeCacheDirError:
        if writable(path) or _world_writable(path):
            raise
        _check_mirror_owner(path)
        return  # a read-only mirror: nobody can plant anything through us
    if writable(path):
        tie_to_remote(path, remote)


TRUSTED_OWNERS_ENV = "STREAMX_TRUSTED_CACHE_OWNERS"


def _check_mirror_owner(path: str) -> None:
    """Refuses a read-only mirror that another user (not root) owns, unless the user named
    that owner in ``STREAMX_TRUSTED_CACHE_OWNERS`` (user names or uids, comma-separated):
    its owner decides what is read from it.

    Raises:
        UnsafeCacheDirError: If the owner is not trusted.
    """
    uid = os.stat(path).st_uid
    if uid in (os.getuid(), 0):
        return
    name = _user_name(uid)
    trusted = {t.strip() for t in os.environ.get(TRUSTED_OWNERS_ENV, "").split(",")}
    if str(uid) in trusted or (name is not None and name in trusted):
        return
    who = f"{name} (uid {uid})" if name is not None else f"uid {uid}"
    raise UnsafeCacheDirError(
        f"Cache directory {path} is a read-only mirror owned by {who}, another user: its "
        f"owner controls what is read from it. To read it anyway, trust that owner with "
        f"{TRUSTED_OWNERS_ENV}={name if name is not None else uid}; otherwise use a "
        "directory of your own as `local`."
    )


def _user_name(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _world_writable(path: str) -> bool:
    mode = os.stat(path).st_mode
    return bool(mode & stat.S_IWOTH and not mode & stat.S_ISVTX)
