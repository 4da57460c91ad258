"""``streamx cp``: copy a dataset between local storage and any remote, checking every file.

Each file is brought to local disk (the source itself when local), checked against the
index's size and hashes, then written to the destination (atomically when local). The
``index.json`` files go last, so an interrupted copy never looks like a complete dataset.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import typer

from streamx.cli.errors import CommandFailed, one_line_errors
from streamx.cli.location import Location, Split, is_remote
from streamx.cli.output import byte_progress, console, human_bytes, print_json
from streamx.cli.verify import file_problems
from streamx.format.index import INDEX_BASENAME, FileInfo, ShardInfo
from streamx.storage.download import download_file, temp_path_for
from streamx.storage.shard_files import remote_url
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
        upload_file(local, remote_url(dst, split, basename))
        return
    path = os.path.join(dst, split, basename)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = temp_path_for(path)
    try:
        shutil.copyfile(local, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _copy_one(src: Location, dst: str, item: _File) -> int:
    path = item.shard.local_path(item.info)
    if src.remote:
        download_file(src.url(item.split, item.info.basename), path, expected_size=item.info.bytes)
    try:
        problems = file_problems(item.info, path)
        if problems:
            raise CommandFailed(f"{src.url(item.split, item.info.basename)} is bad: {problems[0]}")
        _put(path, dst, item.split, item.info.basename)
    finally:
        if src.remote:
            os.remove(path)
    return item.info.bytes


@one_line_errors
def cp(
    src: str = typer.Argument(..., metavar="SRC", help="Dataset directory or URL to copy."),
    dst: str = typer.Argument(..., metavar="DST", help="Destination directory or URL."),
    workers: int = typer.Option(8, "--workers", "-j", min=1, help="Files copied at once."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Copy a dataset (every split) from SRC to DST, verifying sizes and hashes."""
    scratch = tempfile.mkdtemp(prefix="streamx-cp-")
    try:
        location = Location(src, scratch)
        splits = location.splits()
        files = [f for s in splits for f in _files(s)]
        indexes = [(s.name, s.index_path) for s in splits]
        total = sum(f.info.bytes for f in files) + sum(os.path.getsize(p) for _, p in indexes)
        copied = 0
        with byte_progress(as_json) as progress, ThreadPoolExecutor(workers) as pool:
            task = progress.add_task("copying", total=total)
            for nbytes in pool.map(lambda f: _copy_one(location, dst, f), files):
                copied += nbytes
                progress.update(task, completed=copied)
            for name, path in indexes:
                _put(path, dst, name, INDEX_BASENAME)
                copied += os.path.getsize(path)
                progress.update(task, completed=copied)
        summary = {
            "src": src,
            "dst": dst,
            "splits": [s.name for s in splits],
            "files": len(files) + len(indexes),
            "bytes": copied,
            "verified": True,
        }
        if as_json:
            print_json(summary)
        else:
            console.print(
                f"copied {summary['files']} files ({human_bytes(copied)}), sizes and "
                f"hashes verified: {src} -> {dst}"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
