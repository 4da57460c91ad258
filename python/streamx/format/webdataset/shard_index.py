"""A wids shard index: the JSON that lists a WebDataset's tars and their sample counts.

``widsindex create`` (webdataset's tool) and many pipelines write one::

    {"__kind__": "wids-shard-index-v1", "name": "...", "base_path": "...",
     "shardlist": [{"url": "shard-000.tar", "nsamples": 1000, "filesize": 123456}, ...]}

With it, a dataset knows every tar's sample count from one small GET, and no tar is
scanned before it is needed: its member table is read from its cached copy on first use.
A relative ``url`` is resolved against ``base_path``, or else the index's own directory.
"""

from __future__ import annotations

import json
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from streamx.exceptions import CorruptIndexError
from streamx.format.remote_files import RemoteFile, read_json_bounded, stat_file

__all__ = ["KIND", "ListedShard", "read_shard_index"]

KIND = "wids-shard-index-v1"
# An index lists shards, not samples: bounded so a wrong file cannot exhaust memory.
_MAX_BYTES = 256 << 20
_WHAT = "a WebDataset shard index"
_STAT_THREADS = 16


@dataclass(frozen=True)
class ListedShard:
    file: RemoteFile
    samples: int


def _resolve(url: str, base: str) -> str:
    if "://" in url or url.startswith("/"):
        return url
    if "://" in base:
        return posixpath.join(base.rstrip("/"), url)
    return os.path.join(base, url)


def _entry(index: str, number: int, entry: Any) -> tuple[str, int, int | None]:
    url = entry.get("url") if isinstance(entry, dict) else None
    count = entry.get("nsamples") if isinstance(entry, dict) else None
    size = entry.get("filesize") if isinstance(entry, dict) else None
    if not isinstance(url, str) or not url or not isinstance(count, int) or count < 0:
        raise CorruptIndexError(
            f"{index}, shard {number}: an entry needs a `url` and a count `nsamples` >= 0, "
            f"not {json.dumps(entry)[:200]}"
        )
    if size is not None and (not isinstance(size, int) or size < 0):
        raise CorruptIndexError(f"{index}, shard {number}: `filesize` {size!r} is not a size")
    return url, count, size


def read_shard_index(index: str, timeout: float, retry: int) -> list[ListedShard]:
    """The shards ``index`` lists, each stat'ed now (its size and version).

    Raises:
        CorruptIndexError: If the file is not a shard index, an entry is malformed, or a
            shard's size differs from the ``filesize`` the index gives (naming both).
        FileNotFoundError: If the index or a shard it lists is missing.
    """
    document, _ = read_json_bounded(index, _MAX_BYTES, _WHAT, timeout, retry)
    if (
        not isinstance(document, dict)
        or document.get("__kind__", KIND) != KIND
        or not isinstance(document.get("shardlist"), list)
    ):
        raise CorruptIndexError(
            f"{index} is not {_WHAT}: it needs a `shardlist` (and, if it has a `__kind__`, "
            f"{KIND!r})"
        )
    shards = document["shardlist"]
    base = document.get("base_path")
    if not isinstance(base, str) or not base:
        base = posixpath.dirname(index) if "://" in index else os.path.dirname(index)
    entries = [_entry(index, n, e) for n, e in enumerate(shards)]

    def stat(entry: tuple[str, int, int | None]) -> ListedShard:
        url, count, size = entry
        target = _resolve(url, base)
        try:
            file = stat_file(target)
        except FileNotFoundError as err:
            raise FileNotFoundError(f"{target}, listed by {index}, does not exist") from err
        if size is not None and size != file.size:
            raise CorruptIndexError(
                f"{index} gives {target} {size} bytes (`filesize`); it is {file.size} bytes"
            )
        if count * 512 > file.size:  # every sample has at least one member's header
            raise CorruptIndexError(
                f"{index} gives {target} {count} samples; {file.size} bytes hold at most "
                f"{file.size // 512}"
            )
        return ListedShard(file, count)

    with ThreadPoolExecutor(min(_STAT_THREADS, max(len(entries), 1))) as pool:
        return list(pool.map(stat, entries))
