"""Merge the `index.json` files of datasets written in parallel into one index.

The supported way to write in parallel is one writer per sub-directory of a root, then
one merge. Each shard's basename in the merged index is prefixed with the name of the
directory its partition's `index.json` sits in, so the merged index at the root points
at the partitions' files. Output is byte-identical to mosaicml-streaming's merge.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

from streamx.location import INDEX_BASENAME, Location, OutputPair, parse_out
from streamx.runtime.atomic_write import write_atomic
from streamx.storage.download import download_index, temp_path_for
from streamx.storage.filesystems import get_filesystem
from streamx.storage.upload import parse_out as staging_out
from streamx.storage.upload import upload_file

__all__ = ["merge_index"]

logger = logging.getLogger(__name__)

_FILE_KEYS = ("raw_data", "zip_data", "raw_meta", "zip_meta")
Where = str | tuple[str, str]


def merge_index(*args: Any, **kwargs: Any) -> None:
    """Merge partition indexes into `<out>/index.json`.

    Two call forms, as in mosaicml-streaming:

    * ``merge_index(index_file_urls, out, keep_local=True, download_timeout=60)``: each
      entry is a local path, a remote URL, or a ``(local, remote)`` tuple whose local copy
      is used when it exists.
    * ``merge_index(out, keep_local=True, download_timeout=60)``: the partitions are the
      ``index.json`` files found below `out` (not in `out` itself), locally and/or remotely.

    `out` is a local directory, a remote URL or a ``(local, remote)`` tuple; with a
    remote, the merged index is uploaded there. `keep_local=False` removes the local copy
    of the merged index after upload (never a dataset's files).

    Raises:
        ValueError: for arguments matching neither form.
        FileNotFoundError: if a partition index cannot be found.
    """
    total = len(args) + len(kwargs)
    first = args[0] if args else kwargs.get("index_file_urls", kwargs.get("out"))
    if isinstance(first, list) and 2 <= total <= 4:
        _merge_from_list(*args, **kwargs)
    elif isinstance(first, (str, tuple)) and 1 <= total <= 3:
        _merge_from_root(*args, **kwargs)
    else:
        raise ValueError(f"Invalid arguments to merge_index: {args}, {kwargs}")


def _merge_from_list(
    index_file_urls: Sequence[Where],
    out: Where,
    keep_local: bool = True,
    download_timeout: float = 60,
) -> None:
    if not index_file_urls or not out:
        logger.warning("merge_index needs both index_file_urls and out; nothing merged")
        return
    urls: list[Where] = []
    for url in dict.fromkeys(index_file_urls):  # drop duplicates, keep order
        if isinstance(url, str):
            urls.append(url.rstrip("/").strip())
        else:
            urls.append((url[0].rstrip("/").strip(), url[1].rstrip("/").strip()))
    roots = parse_out(out)
    shards: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="streamx-merge-") as scratch:
        for url in urls:
            src = url if isinstance(url, str) else (url[0] if os.path.exists(url[0]) else url[1])
            fetched = _fetch_index(src, scratch, download_timeout)
            shards += _prefixed_shards(fetched, _partition_prefix(url, roots))
    _write_merged(out, {"version": 2, "shards": shards}, keep_local)


def _fetch_index(src: str, scratch: str, timeout: float) -> str:
    """A local path holding the index at `src`, downloading it into `scratch` if remote."""
    where = Location.parse(src)
    if not where.is_remote:
        local = where.local_path
        if not os.path.isfile(local):
            raise FileNotFoundError(f"Index file {local} does not exist or not accessible.")
        return local
    dest = os.path.join(scratch, where.netloc, where.key)
    try:
        download_index(src, dest, timeout=timeout)
    except FileNotFoundError:
        raise
    except Exception as err:
        raise RuntimeError(f"Failed to download index.json: {src} to {dest}") from err
    return dest


def _partition_prefix(entry: str | tuple[str, str], roots: OutputPair) -> str:
    """The partition directory's path relative to the merged index's directory.

    The merged index lives in ``out``, so each shard's basename must lead from there to the
    partition's file. A partition directly under ``out`` gets its directory name (as in
    mosaicml-streaming); a deeper one its relative path.

    Raises:
        ValueError: If the partition is not under ``out`` (its files would not be found
            from the merged index), naming the partition.
    """
    forms = [entry] if isinstance(entry, str) else list(entry)
    for form in forms:
        where = Location.parse(form)
        relative = None
        if where.is_remote and roots.remote is not None and roots.remote.is_remote:
            root = roots.remote
            if (where.scheme, where.netloc) == (root.scheme, root.netloc):
                directory = posixpath.dirname(where.key.rstrip("/"))
                relative = _relative(f"/{directory}", f"/{root.key.rstrip('/')}")
        elif not where.is_remote:
            base = roots.local if roots.local is not None else _local_root(roots.remote)
            if base is not None:
                directory = os.path.dirname(os.path.abspath(where.local_path))
                relative = _relative(directory, os.path.abspath(base))
        if relative is not None:
            return relative
    raise ValueError(
        f"Partition index {entry!r} is not in a sub-directory of the merged index's "
        f"directory {_describe_out(roots)}: the merged index could not lead to its shards. "
        "Write each partition under OUT, or merge into their common parent."
    )


def _local_root(remote: Location | None) -> str | None:
    """A ``(local, file://)`` pair's remote root as a local directory."""
    return None if remote is None or remote.is_remote else remote.local_path


def _relative(directory: str, root: str) -> str | None:
    """Absolute ``directory`` relative to absolute ``root`` when strictly below it."""
    relative = posixpath.relpath(posixpath.normpath(directory), posixpath.normpath(root))
    if relative == "." or relative.split("/")[0] == "..":
        return None
    return relative


def _describe_out(roots: OutputPair) -> str:
    places = [p for p in (roots.local, roots.remote and roots.remote.url) if p]
    return " / ".join(places)


def _prefixed_shards(index_path: str, partition: str) -> list[Any]:
    """The partition's shards with basenames prefixed by `partition` (a relative path)."""
    with open(index_path) as f:
        shards: list[Any] = json.load(f)["shards"]
    for shard in shards:
        for key in _FILE_KEYS:
            if shard.get(key):
                shard[key]["basename"] = os.path.join(partition, shard[key]["basename"])
    return shards


def _write_merged(out: Where, obj: dict[str, Any], keep_local: bool) -> None:
    local, remote, temporary = staging_out(out)
    os.makedirs(local, exist_ok=True)
    path = os.path.join(local, INDEX_BASENAME)
    write_atomic(path, json.dumps(obj), temp=temp_path_for)  # a name cache clean knows
    if remote is None:
        return
    upload_file(path, f"{remote.rstrip('/')}/{INDEX_BASENAME}")
    if temporary:
        # A staging directory the user never named: keeping it would keep nothing anyone
        # can find, so `keep_local` applies only to a local directory given in `out`.
        shutil.rmtree(local, ignore_errors=True)
    elif not keep_local:
        os.remove(path)


def _merge_from_root(out: Where, keep_local: bool = True, download_timeout: float = 60) -> None:
    if not out:
        logger.warning("merge_index: no dataset root given; nothing merged")
        return
    local_root: str | None
    remote_root: str | None
    if isinstance(out, tuple):
        local_root, remote_root = out
    elif not Location.parse(out).is_remote:
        local_root, remote_root = Location.parse(out).local_path, None
    else:
        local_root, remote_root = None, out  # remote only: nothing local to look at
    local_files = _local_partition_indexes(local_root) if local_root else []
    if remote_root is None:
        _merge_from_list(list(local_files), out, keep_local, download_timeout)
        return
    remote_files = _remote_partition_indexes(remote_root)
    urls: list[Where]
    if len(local_files) == len(remote_files):
        urls = list(zip(local_files, remote_files))
    else:
        urls = list(remote_files)
    _merge_from_list(urls, out, keep_local, download_timeout)


def _local_partition_indexes(root: str) -> list[str]:
    """Every `index.json` below `root`, excluding `root/index.json`, in sorted order."""
    found = []
    root = root.rstrip("/") or "/"
    for dirpath, _, files in os.walk(root):
        if dirpath.rstrip("/") == root:
            continue
        found += [os.path.join(dirpath, f) for f in files if f == INDEX_BASENAME]
    return sorted(found)


def _remote_partition_indexes(root: str) -> list[str]:
    """URLs of every `index.json` below the remote `root`, excluding the root's own."""
    fs, path = get_filesystem(root)
    path = path.rstrip("/")
    found = [
        p
        for p in fs.find(path)
        if p.endswith("/" + INDEX_BASENAME) and os.path.dirname(p).rstrip("/") != path
    ]
    return [fs.unstrip_protocol(p) for p in sorted(found)]
