"""Where a dataset lives, for the commands that take ``PATH|URL``.

A dataset is a directory (local, or under any scheme streamx reads) holding ``index.json``,
or a directory whose sub-directories (the splits) each hold one. Remote files are fetched
into a scratch directory with streamx's own downloader (timeouts, retries, ranged GETs), so
every command reads local files the same way, whatever the source.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from streamx.cache.cached_files import remote_url
from streamx.format.index import INDEX_BASENAME, ShardInfo, parse_index
from streamx.location import Location as Where
from streamx.storage.download import download_file, download_index
from streamx.storage.filesystems import get_filesystem

__all__ = ["Location", "Split", "check_component", "inside", "is_remote", "local_path"]


def is_remote(target: str) -> bool:
    """Whether ``target`` is a URL of a remote store (``file://`` counts as local)."""
    return Where.parse(target).is_remote


def local_path(target: str) -> str:
    """The local directory a path or ``file://`` URL names."""
    return Where.parse(target).local_path


def check_component(name: str, where: str) -> str:
    """``name`` when it is one plain path component (a split's directory name).

    A remote listing may hold keys such as ``ds/../x``: their ``..`` must never become a
    directory the commands write into.

    Raises:
        ValueError: For ``''``, ``.``, ``..`` or a name holding a separator or NUL, naming it.
    """
    if name in ("", ".", "..") or any(c in name for c in "/\\\0"):
        raise ValueError(
            f"Refusing the entry {name!r} listed under {where}: it is not a plain directory "
            "name and would resolve outside the dataset"
        )
    return name


def _unreachable(url: str, err: OSError) -> OSError:
    """The error of a store that did not answer, naming the URL asked for."""
    reason = " ".join(str(err).split()) or type(err).__name__
    message = f"Cannot read {url}: {type(err).__name__}: {reason}"
    if isinstance(err, PermissionError):  # reached, but refused: not a connection problem
        return PermissionError(message)
    return ConnectionError(message)


def inside(root: str, relative: str, what: str) -> str:
    """``root/relative`` after resolving ``..`` and symbolic links, checked to stay in ``root``.

    Raises:
        ValueError: If the path resolves outside ``root``, naming ``what`` (the key or file).
    """
    base = os.path.realpath(root)
    path = os.path.realpath(os.path.join(base, relative))
    if os.path.commonpath([base, path]) != base or path == base:
        raise ValueError(
            f"Refusing {what}: it resolves to {path}, outside {root} (a '..' or a symbolic link)"
        )
    return path


@dataclass(frozen=True)
class Split:
    """One ``index.json`` of a dataset: ``name`` is its sub-directory ('' for the root)."""

    name: str
    shards: tuple[ShardInfo, ...]
    index_path: str


class Location:
    """A dataset directory, local or remote.

    Args:
        target: A local path or a URL (``s3://``, ``gs://``, ``https://``...).
        scratch: Where remote files are fetched to (unused for local datasets).

    Raises:
        FileNotFoundError: If neither the directory nor any sub-directory holds an index.
    """

    def __init__(self, target: str, scratch: str) -> None:
        self.target = target.rstrip("/") or "/"
        self.remote = is_remote(target)
        self.root = scratch if self.remote else local_path(self.target)
        self.split_names = self._find_splits()

    def _find_splits(self) -> list[str]:
        if not self.remote and not os.path.isdir(self.root):
            raise FileNotFoundError(f"No such dataset directory: {self.target}")
        if self._exists(INDEX_BASENAME):
            return [""]
        try:
            children = self._children()
        except FileNotFoundError:
            children = []
        children = [check_component(n, self.target) for n in children]
        names = sorted(n for n in children if self._exists(f"{n}/{INDEX_BASENAME}"))
        if not names:
            raise FileNotFoundError(f"No {INDEX_BASENAME} in {self.target} or its sub-directories")
        return names

    def _exists(self, relative: str) -> bool:
        if not self.remote:
            return os.path.isfile(os.path.join(self.root, relative))
        url = f"{self.target}/{relative}"
        fs, path = get_filesystem(url)
        try:
            return bool(fs.exists(path))
        except OSError as err:  # a store that cannot be reached: say which one
            raise _unreachable(url, err) from err

    def _children(self) -> list[str]:
        if not self.remote:
            return [e.name for e in os.scandir(self.root) if e.is_dir()]
        fs, path = get_filesystem(self.target)
        try:
            entries = fs.ls(path, detail=True)
        except FileNotFoundError:
            raise
        except OSError as err:
            raise _unreachable(self.target, err) from err
        return [
            os.path.basename(str(e["name"]).rstrip("/"))
            for e in entries
            if e["type"] == "directory"
        ]

    def url(self, split: str, basename: str) -> str:
        """The URL (or path) of one of a split's files at the source."""
        if self.remote:
            return remote_url(self.target, split, basename)
        return os.path.join(self.root, split, basename)

    def load_split(self, name: str) -> Split:
        """Reads (fetching it first when remote) and parses one split's index."""
        path = os.path.join(self.root, name, INDEX_BASENAME)
        if self.remote:
            download_index(self.url(name, INDEX_BASENAME), path)
        return Split(name, tuple(parse_index(self.root, name, path)), path)

    def splits(self) -> list[Split]:
        """Every split, parsed."""
        return [self.load_split(name) for name in self.split_names]

    def fetch(self, shard: ShardInfo, *, raw: bool = False) -> None:
        """Brings a shard's files to ``shard.local_path`` (a no-op for local datasets).

        Fetches the compressed files when there are any, else (or with ``raw``) the raw ones.
        """
        if not self.remote:
            return
        for plain, packed in shard.file_pairs:
            info = packed if packed is not None and not raw else plain
            dest = shard.local_path(info)
            if not os.path.exists(dest):
                download_file(self.url(shard.split, info.basename), dest, expected_size=info.bytes)

    def readable(self, shard: ShardInfo, scratch: str) -> ShardInfo:
        """The shard as a reader may open it without writing into the user's dataset.

        Readers decompress a shard found only compressed next to its compressed file; for
        a local dataset that would be the user's directory, so such a shard is linked into
        ``scratch`` and read from there. Remote shards already live in the scratch root.
        """
        if self.remote or all(os.path.exists(shard.local_path(raw)) for raw, _ in shard.file_pairs):
            return shard
        moved = replace(shard, dirname=scratch)
        for raw, packed in shard.file_pairs:
            source = shard.local_path(raw if packed is None else packed)
            target = moved.local_path(raw if packed is None else packed)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.exists(target):
                os.symlink(os.path.abspath(source), target)
        return moved
