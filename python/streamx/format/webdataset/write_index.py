"""Writing a wids shard index for tars that have none, so later runs skip the header scan."""

from __future__ import annotations

import json
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor

from streamx.format.remote_files import RemoteFile, list_files
from streamx.format.webdataset.index import scanned_table
from streamx.format.webdataset.member_table import read_count
from streamx.format.webdataset.shard_index import KIND
from streamx.runtime.atomic_write import write_atomic
from streamx.storage.upload import upload_file

__all__ = ["write_shard_index"]

_THREADS = 8


def _count(file: RemoteFile, timeout: float, retry: int) -> int:
    return read_count(scanned_table(file, timeout, retry))


def _relative(url: str, base: str) -> str:
    folder = base.rstrip("/") + "/"
    return url[len(folder) :] if url.startswith(folder) else url


def write_shard_index(
    source: str, out: str, *, timeout: float = 60.0, retry: int = 2, name: str | None = None
) -> dict[str, object]:
    """Counts the samples of ``source``'s tars and writes a wids shard index to ``out``.

    Args:
        source: Tars as :class:`~streamx.WebDatasetStream` takes them (a file, directory,
            glob or brace notation; local or remote).
        out: Where the index goes (a local path or a URL); tars beside or under it are
            listed by relative URL, so the index moves with them.
        timeout: Seconds each ranged GET of the header scan may take.
        retry: Attempts per GET.
        name: The index's ``name`` (default: the source).

    Returns:
        The index written.

    Raises:
        FileNotFoundError: If ``source`` holds no tar.
        CorruptShardError: If a file is not a tar or is truncated, naming it.
    """
    files = list_files(source, ".tar", "tar")
    with ThreadPoolExecutor(min(_THREADS, len(files))) as pool:
        counts = list(pool.map(lambda f: _count(f, timeout, retry), files))
    remote = "://" in out
    base = posixpath.dirname(out) if remote else os.path.dirname(os.path.abspath(out))
    shardlist = [
        {
            "url": _relative(f.url if remote else os.path.abspath(f.url), base),
            "nsamples": n,
            "filesize": f.size,
        }
        for f, n in zip(files, counts)
    ]
    index: dict[str, object] = {
        "__kind__": KIND,
        "wids_version": 1,
        "name": name or source,
        "shardlist": shardlist,
    }
    body = json.dumps(index, indent=1)
    if remote:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="streamx-wids-") as scratch:
            local = os.path.join(scratch, "index.json")
            write_atomic(local, body)
            upload_file(local, out)
    else:
        write_atomic(out, body)
    return index
