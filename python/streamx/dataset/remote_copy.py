"""Telling a stale cached index from a bad remote copy, when a fetched file has the wrong size.

The usual cause is a dataset rewritten on the remote while an old ``index.json`` stays in
the cache: deleting the cache helps. But when the remote's own index still gives the size the
cached one does, the remote's file itself is truncated or corrupt, and deleting the cache would
only fetch the same bad bytes again: the error must say so, naming the remote file.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid

from streamx.cache import cached_files
from streamx.dataset.stream_hooks import StreamHooks
from streamx.exceptions import CorruptShardError
from streamx.format.index import INDEX_BASENAME, FileInfo

__all__ = ["raise_if_remote_copy_bad"]


def raise_if_remote_copy_bad(
    stream: StreamHooks, info: FileInfo, got: int | None, cause: BaseException
) -> None:
    """Raises when the remote's index agrees with the cached one about ``info``'s size.

    Returns quietly when the remote index differs (the cached one is stale) or cannot be
    read (the caller's stale-index error stands).

    Raises:
        CorruptShardError: Naming the remote file, its size and the size both indexes give.
    """
    if stream.remote is None or _remote_listed_size(stream, info.basename) != info.bytes:
        return
    where = cached_files.remote_url(stream.remote, stream.split, info.basename)
    size = f"{got} bytes" if got is not None else "a different number of bytes"
    raise CorruptShardError(
        f"The remote copy of {where} is bad: it is {size}, but the remote's own index.json "
        f"(and the cached {stream.index_path}) says {info.bytes}. The file on the remote is "
        "truncated or corrupt; deleting the local cache will not help: rewrite the dataset "
        "or restore that file on the remote."
    ) from cause


def _remote_listed_size(stream: StreamHooks, basename: str) -> int | None:
    """The size the remote's current ``index.json`` gives ``basename`` (``None``: unknown)."""
    tmp_name = f".{INDEX_BASENAME}.check.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    tmp = os.path.join(stream.local, stream.split, tmp_name)
    try:
        stream._download_file(INDEX_BASENAME, tmp_name)
        with open(tmp, "rb") as file:
            shards = json.load(file).get("shards", [])
        for shard in shards:
            for key in ("raw_data", "zip_data", "raw_meta", "zip_meta"):
                entry = shard.get(key) if isinstance(shard, dict) else None
                if isinstance(entry, dict) and entry.get("basename") == basename:
                    size = entry.get("bytes")
                    return size if isinstance(size, int) else None
    except Exception:
        return None  # cannot tell: the stale-index advice stands
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
    return None
