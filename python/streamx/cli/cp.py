"""``streamx cp``: copy a dataset between local storage and any remote, checking every file.

Each file is brought to local disk (the source itself when local), checked against the
index's size and hashes, then written to the destination (atomically when local). The
``index.json`` files go last, so an interrupted copy never looks like a complete dataset.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import typer

from streamx.cache.cached_files import remote_url
from streamx.cli.errors import CommandFailed, one_line_errors
from streamx.cli.location import Location, Split, inside, is_remote, local_path
from streamx.cli.output import byte_progress, console, human_bytes, print_json
from streamx.cli.verify import file_problems
from streamx.format.index import INDEX_BASENAME, FileInfo, ShardInfo
from streamx.runtime.atomic_write import replacing
from streamx.storage.download import download_file, temp_path_for
from streamx.storage.upload import upload_file

__all__ = ["cp"]


@dataclass(frozen=True)
class _File:
    split: str
    shard: ShardInfo
    info: FileInfo


def _files(split: Split) -> list[_File]:
    """The canonical file of each pair: the compressed one when the index has it."""
    return [
        _File(split.name, shard, packed or raw)
        for shard in split.shards
        for raw, packed in shard.file_pairs
    ]


def _put(local: str, dst: str, split: str, basename: str) -> None:
    if is_remote(dst):
        relative = posixpath.normpath(posixpath.join(split or ".", basename))
        if relative.startswith("../") or relative in ("..", ".") or relative.startswith("/"):
            raise CommandFailed(f"Refusing {split}/{basename}: it leads outside {dst}")
        upload_file(local, remote_url(dst, split, basename))
        return
    root = local_path(dst)
    os.makedirs(root, exist_ok=True)
    path = inside(root, os.path.join(split, basename), f"{split}/{basename}".lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # The parent existed or was just made: check again that no link leads it astray.
    path = inside(root, os.path.relpath(path, os.path.realpath(root)), basename)
    # A download's temporary name: `streamx cache clean` collects one left in a cache.
    with replacing(path, temp=temp_path_for) as tmp:
        shutil.copyfile(local, tmp, follow_symlinks=False)


def _source_path(src: Location, item: _File) -> str:
    """Where the file is read from: inside the scratch directory for a remote source, or the
    source dataset's own file, which must be a regular file inside it (no link)."""
    path = item.shard.local_path(item.info)
    relative = os.path.relpath(path, src.root)
    name = src.url(item.split, item.info.basename)
    checked = inside(src.root, relative, name)
    if not src.remote and os.path.islink(path):
        raise CommandFailed(f"Refusing {name}: it is a symbolic link; cp copies regular files")
    return checked if src.remote else path


def _check_index(src: Location, split: str, path: str) -> None:
    """A local source's index must be a regular file inside it, as its shards must."""
    name = src.url(split, INDEX_BASENAME)
    inside(src.root, os.path.relpath(path, src.root), name)
    if not src.remote and os.path.islink(path):
        raise CommandFailed(f"Refusing {name}: it is a symbolic link; cp copies regular files")


def _copy_one(src: Location, dst: str, item: _File) -> tuple[int, tuple[str, ...]]:
    """Copies one file; returns its size and the hash algorithms checked on it."""
    path = _source_path(src, item)
    if src.remote:
        download_file(src.url(item.split, item.info.basename), path, expected_size=item.info.bytes)
    try:
        problems = file_problems(item.info, path)
        if problems:
            raise CommandFailed(f"{src.url(item.split, item.info.basename)} is bad: {problems[0]}")
        _put(path, dst, item.split, item.info.basename)
    finally:
        if src.remote and os.path.lexists(path):
            os.remove(path)
    return item.info.bytes, tuple(sorted(item.info.hashes))


def _checked(hashed: Counter[str], total: int) -> str:
    """What was verified, exactly: sizes always; each hash on the files whose index has it."""
    if not hashed:
        return "sizes checked; the index lists no hashes, so none verified"
    each = ", ".join(f"{algo} on {n} of {total}" for algo, n in sorted(hashed.items()))
    return f"sizes checked, hashes verified ({each} files)"


@one_line_errors
def cp(
    src: str = typer.Argument(..., metavar="SRC", help="Dataset directory or URL to copy."),
    dst: str = typer.Argument(..., metavar="DST", help="Destination directory or URL."),
    workers: int = typer.Option(8, "--workers", "-j", min=1, help="Files copied at once."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Copy a dataset (every split) from SRC to DST, checking sizes and the index's hashes."""
    scratch = tempfile.mkdtemp(prefix="streamx-cp-")
    try:
        location = Location(src, scratch)
        splits = location.splits()
        files = [f for s in splits for f in _files(s)]
        indexes = [(s.name, s.index_path) for s in splits]
        total = sum(f.info.bytes for f in files) + sum(os.path.getsize(p) for _, p in indexes)
        copied = 0
        hashed: Counter[str] = Counter()
        with byte_progress(as_json) as progress, ThreadPoolExecutor(workers) as pool:
            task = progress.add_task("copying", total=total)
            for nbytes, algos in pool.map(lambda f: _copy_one(location, dst, f), files):
                copied += nbytes
                hashed.update(algos)
                progress.update(task, completed=copied)
            for name, path in indexes:
                _check_index(location, name, path)
                _put(path, dst, name, INDEX_BASENAME)
                copied += os.path.getsize(path)
                progress.update(task, completed=copied)
        summary = {
            "src": src,
            "dst": dst,
            "splits": [s.name for s in splits],
            "files": len(files) + len(indexes),
            "bytes": copied,
            "verified": {"sizes": len(files), "hashes": dict(sorted(hashed.items()))},
        }
        if as_json:
            print_json(summary)
        else:
            checked = _checked(hashed, len(files))
            console.print(
                f"copied {summary['files']} files ({human_bytes(copied)}), {checked}: "
                f"{src} -> {dst}"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
