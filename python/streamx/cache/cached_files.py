"""A shard's files in a local cache directory: what is there, checking and dropping them.

Dropping is guarded, because ``index.json`` may come from anyone: streamx deletes only a
regular file whose directory resolves inside the stream's local directory (never through a
symlink planted in it), and only one of the size the index gives (the size streamx checked
when it wrote the file), so an index naming a user's own file does not delete it.

``index.json`` is the only description of a remote's files that streamx has, so a file
whose size differs from its entry means the cached index no longer describes the remote
(the dataset was rewritten under an old local cache): that is reported as such, with what
to do, rather than as a short or long download.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import stat
import uuid
from typing import NoReturn

from streamx import _core
from streamx.exceptions import ChecksumError, StaleIndexError
from streamx.format.index import INDEX_BASENAME, FileInfo, ShardInfo

__all__ = [
    "TempScan",
    "bytes_present",
    "check_hash",
    "check_size",
    "evict_files",
    "files_ready",
    "listed_names",
    "normalize",
    "remote_url",
    "remove_counted",
    "remove_stale_temps",
    "safe_remove",
    "set_up_shard",
    "staging_name",
    "stale_size",
    "within",
]

# Temporary names of a download (download.temp_path_for), of a decompression (the core's
# compression::temp_path), and of a download staged until its digest is checked
# (staging_name) with that download's own temporary, for a file named NAME.
_TEMP_FORMS = (
    r"\.{name}\.\d+\.[0-9a-f]+\.tmp",
    r"\.{name}\.\d+\.[0-9a-f]+\.parts(?:\.new)?",  # storage.landed_parts's records
    r"\.{name}\.\d+\.[0-9a-f]+\.h\d+\.\d+\.[0-9a-f]+\.tmp",  # storage.hedge's scratch files
    r"{name}\.tmp\.\d+\.\d+",
    r"\.{name}\.\d+\.[0-9a-f]+\.verify",
    r"\.\.{name}\.\d+\.[0-9a-f]+\.verify\.\d+\.[0-9a-f]+\.tmp",
)


def staging_name(basename: str) -> str:
    """Where a download of ``basename`` waits for its digest check: a unique hidden name in
    the same directory (so the final rename is atomic), tagged with this process's pid."""
    head, tail = posixpath.split(basename)
    return posixpath.join(head, f".{tail}.{os.getpid()}.{uuid.uuid4().hex[:8]}.verify")


def within(root: str, path: str) -> bool:
    real_root = os.path.realpath(root)
    where = os.path.realpath(os.path.dirname(path))
    return where == real_root or where.startswith(real_root + os.sep)


def ledger_entries(
    shard: ShardInfo, real_dirs: dict[str, str] | None = None
) -> list[tuple[str, int]]:
    """The files of ``shard`` the cache ledger may delete, each with the size the index gives.

    Each path goes under the real path of its directory, so the ledger deletes nothing
    through a symlink planted there later (it checks the directory is still that path); a
    file whose directory leads out of the stream's ``local`` is left out. ``real_dirs``
    keeps each directory's real path for the next shard (the shards of a stream share one:
    resolving it per file took most of a large dataset's construction).
    """
    real_dirs = {} if real_dirs is None else real_dirs

    def real(directory: str) -> str:
        found = real_dirs.get(directory)
        if found is None:
            found = real_dirs[directory] = os.path.realpath(directory)
        return found

    entries = []
    root = real(shard.dirname)
    for pair in shard.file_pairs:
        for f in pair:
            if not f:
                continue
            path = shard.local_path(f)
            where = real(os.path.dirname(path))
            if where == root or where.startswith(root + os.sep):
                entries.append((os.path.join(where, os.path.basename(path)), int(f.bytes)))
    return entries


def _inside(shard: ShardInfo, path: str) -> bool:
    return within(shard.dirname, path)


def safe_remove(shard: ShardInfo, info: FileInfo | None, path: str) -> bool:
    """Deletes one of ``shard``'s files if streamx may: a regular file inside the stream's
    local directory and, when ``info`` is given, of the size the index gives it.

    Returns:
        Whether the file was deleted.
    """
    try:
        meta = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(meta.st_mode) or not _inside(shard, path):
        return False
    if info is not None and meta.st_size != info.bytes:
        return False
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
        return True
    return False


# The same forms with the file's name captured: one listing of a directory then serves
# every shard in it (matching each shard's forms against a full listing was quadratic).
_TEMP_PARSERS = tuple(re.compile(form.replace("{name}", "(?P<name>.+)")) for form in _TEMP_FORMS)


class TempScan:
    """The temporary files of each cache directory, listed once: name of the file they are
    a temporary of -> their paths. A directory is listed on first use."""

    def __init__(self) -> None:
        self._dirs: dict[str, dict[str, list[str]]] = {}

    def temps_of(self, path: str) -> list[str]:
        """Paths of the temporaries of the file at ``path`` (by name only)."""
        directory, name = os.path.split(path)
        by_name = self._dirs.get(directory)
        if by_name is None:
            by_name = self._dirs[directory] = _list_temps(directory)
        return by_name.pop(name, [])


def _list_temps(directory: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return found
    for entry in names:
        for parser in _TEMP_PARSERS:
            match = parser.fullmatch(entry)
            if match is not None:
                found.setdefault(match["name"], []).append(os.path.join(directory, entry))
    return found


def listed_names(directory: str) -> list[str]:
    """The names in ``directory`` (none when it cannot be listed), and for each temporary
    there the name of the file it is a temporary of."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = list(names)
    for entry in names:
        for parser in _TEMP_PARSERS:
            match = parser.fullmatch(entry)
            if match is not None:
                found.append(match["name"])
    return found


def remove_stale_temps(shard: ShardInfo, scan: TempScan | None = None) -> int:
    """Deletes the temporary files that killed downloads or decompressions of ``shard`` left
    (the caller knows no live process is preparing it). Returns the bytes freed. ``scan``
    shares one listing of each directory between the shards of a dataset."""
    scan = TempScan() if scan is None else scan
    freed = 0
    for pair in shard.file_pairs:
        for info in pair:
            if info is None:
                continue
            for path in scan.temps_of(shard.local_path(info)):
                try:
                    meta = os.lstat(path)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(meta.st_mode) and safe_remove(shard, None, path):
                    freed += meta.st_size
    return freed


def remote_url(remote: str, split: str, basename: str) -> str:
    """``remote/split/basename``, whatever slashes the parts carry."""
    parts = [remote.rstrip("/")]
    if split:
        parts.append(split.strip("/"))
    return "/".join([*parts, basename])


def check_size(info: FileInfo, path: str) -> None:
    """Checks a file just fetched against its index entry; a mismatch is deleted.

    Raises:
        StaleIndexError: If the sizes differ.
    """
    got = os.path.getsize(path)
    if got == info.bytes:
        return
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    stale_size(info, os.path.join(os.path.dirname(path), INDEX_BASENAME), got)


def stale_size(
    info: FileInfo, index: str, got: int | None, cause: Exception | None = None
) -> NoReturn:
    """Raises the error for a remote file whose size differs from the cached index's.

    Raises:
        StaleIndexError: Always.
    """
    path = os.path.join(os.path.dirname(index), info.basename)
    raise StaleIndexError(
        f"{info.basename} from the remote is {got if got is not None else 'another number of'} "
        f"bytes, but the cached {index} says "
        f"{info.bytes}: that index.json appears stale versus the remote (was the dataset "
        f"rewritten?). Delete {os.path.dirname(path)} or use a fresh `local` directory."
        + (f" (after every attempt: {cause})" if cause is not None else "")
    ) from cause


def check_hash(algo: str | None, info: FileInfo, path: str, named: str | None = None) -> None:
    """With ``algo`` (``validate_hash``), checks a file against the index; a bad file is
    deleted, so no reader maps it. ``named``: the file's real name, when ``path`` is where it
    waits before taking it (errors name the shard file the user knows).

    Raises:
        ValueError: If the index records no digest of that algorithm.
        ChecksumError: If the digest differs.
    """
    if not algo:
        return
    if algo not in info.hashes:
        os.remove(path)
        raise ValueError(
            f"Hash algorithm `{algo}` chosen for data validation does not match with those "
            f"provided during dataset creation `{sorted(info.hashes)}`. Provide one of those."
        )
    try:
        _core.verify_file(algo, path, info.hashes[algo])
    except ChecksumError:
        os.remove(path)  # never leave bad bytes where a reader could map them
        if named is None:
            raise
        raise ChecksumError(f"Checksum failure: {named}") from None


def files_ready(shard: ShardInfo) -> bool:
    """Whether every file pair has its raw or its compressed form on disk."""
    return all(
        os.path.exists(shard.local_path(raw))
        or (packed is not None and os.path.exists(shard.local_path(packed)))
        for raw, packed in shard.file_pairs
    )


def bytes_present(shard: ShardInfo) -> int:
    """Bytes of the shard's files (raw and compressed) on disk."""
    total = 0
    for pair in shard.file_pairs:
        for info in pair:
            if info is not None and os.path.exists(shard.local_path(info)):
                total += os.path.getsize(shard.local_path(info))
    return total


def normalize(shard: ShardInfo, safe_keep_zip: bool) -> None:
    """Drops a compressed file left next to its decompressed one when zips are not kept."""
    if safe_keep_zip:
        return
    for raw, packed in shard.file_pairs:
        if packed is not None and os.path.exists(shard.local_path(raw)):
            safe_remove(shard, packed, shard.local_path(packed))


def evict_files(shard: ShardInfo, raw: bool = True, packed: bool = True) -> int:
    """Deletes the shard's raw and/or compressed files; returns the bytes the index gives
    for those that existed."""
    freed = 0
    for pair in shard.file_pairs:
        for info, wanted in zip(pair, (raw, packed)):
            if wanted and info is not None and safe_remove(shard, info, shard.local_path(info)):
                freed += info.bytes
    return freed


def set_up_shard(shard: ShardInfo, safe_keep_zip: bool) -> int:
    """Brings a shard's local files to a consistent state and returns the cache bytes they
    count for (zero: absent), as mosaicml-streaming's ``Reader.set_up_local`` does.

    A form (raw or compressed) present for only some file pairs is deleted; a raw form
    without its compressed one is dropped when zips are kept (it cannot arise naturally);
    a compressed form next to a raw one is dropped when zips are not kept.

    Raises:
        ValueError: If an uncompressed shard has compressed files.
    """
    pairs = shard.file_pairs
    has_raw = _complete(shard, [raw for raw, _ in pairs])
    packed_infos = [z for _, z in pairs if z is not None]
    has_zip = bool(packed_infos) and _complete(shard, packed_infos)
    if not shard.compression and has_zip:
        raise ValueError(
            f"Shard {shard.raw_data.basename} is uncompressed but has compressed files"
        )
    if shard.compression and packed_infos and has_raw and has_zip != safe_keep_zip:
        if safe_keep_zip:
            evict_files(shard, packed=False)
            has_raw = False
        else:
            evict_files(shard, raw=False)
            has_zip = False
    return (shard.get_raw_size() if has_raw else 0) + (
        (shard.get_zip_size() or 0) if has_zip else 0
    )


def _complete(shard: ShardInfo, infos: list[FileInfo]) -> bool:
    """Whether all of ``infos`` exist; a partial set is deleted (it is of no use)."""
    present = [os.path.exists(shard.local_path(info)) for info in infos]
    if all(present):
        return True
    for info, there in zip(infos, present):
        if there:
            safe_remove(shard, info, shard.local_path(info))
    return False


def remove_counted(info: FileInfo, path: str, root: str | None = None) -> int:
    """Deletes ``path`` if streamx may (a regular file of the size the index gives, inside
    ``root`` when given); returns the bytes the index gives for it, or 0."""
    try:
        meta = os.lstat(path)
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(meta.st_mode) or meta.st_size != info.bytes:
        return 0
    if root is not None and not within(root, path):
        return 0
    try:
        os.remove(path)
    except FileNotFoundError:
        return 0
    return info.bytes
