"""Where data lives: one parsed value for a URL or a local path, and a writer's destination.

Every entry point (the writers, ``convert``, ``merge_index``, ``streamx cp``, the datasets)
parses what the user gave once, here, and asks the value: is it remote, which local
directory does it name, what is the URL of a file under it. ``file://`` URLs and bare paths
are the same local place everywhere.

This module sits on the lowest floor: it imports nothing of streamx, so any layer may use it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlparse

__all__ = ["INDEX_BASENAME", "Location", "OutputPair", "parse_out"]

INDEX_BASENAME = "index.json"

_LOCAL_SCHEMES = ("", "file")


@dataclass(frozen=True)
class Location:
    """A parsed ``scheme://netloc/path`` URL, or a local path (scheme ``''``).

    Attributes:
        url: The text as given (``~`` not expanded).
        scheme: ``'s3'``, ``'gs'``, ``'az'``, ``'hf'``, ``'https'``, ``'file'``, ``'dbfs'``..., or
            ``''`` for a bare path (a Windows drive letter is a path, not a scheme).
        netloc: The bucket, container or host; ``''`` for local places.
        path: The key or path under ``netloc`` (starts with ``/`` for URLs with a netloc).
    """

    url: str
    scheme: str
    netloc: str
    path: str

    @classmethod
    def parse(cls, url: str | os.PathLike[str]) -> Location:
        """Parses ``url`` (a URL or a local path); nothing is checked for existence.

        Raises:
            TypeError: If ``url`` is neither a string nor a path.
            ValueError: If ``url`` is empty.
        """
        if isinstance(url, os.PathLike):
            url = os.fspath(url)
        if not isinstance(url, str):
            raise TypeError(f"Expected a path or URL string, got {type(url).__name__}: {url!r}")
        if not url:
            raise ValueError("Expected a path or URL, got an empty string")
        if url.startswith("dbfs:/"):
            return cls(url, "dbfs", "", url[len("dbfs:") :])
        if url.startswith("file:"):
            return cls(url, "file", "", _file_path(url))
        parsed = urlparse(url)
        if len(parsed.scheme) <= 1:  # no scheme, or a Windows drive letter
            return cls(url, "", "", url)
        return cls(url, parsed.scheme, parsed.netloc, parsed.path)

    @property
    def is_remote(self) -> bool:
        """Whether the data is behind a network store (``file://`` and paths are local)."""
        return self.scheme not in _LOCAL_SCHEMES

    @property
    def local_path(self) -> str:
        """The local directory or file this names, with ``~`` expanded.

        Raises:
            ValueError: If the location is remote.
        """
        if self.is_remote:
            raise ValueError(f"{self.url} is a remote URL, not a local path")
        return os.path.expanduser(self.path)

    @property
    def key(self) -> str:
        """The object key under the bucket: the path without its leading ``/``."""
        return self.path.lstrip("/")

    def __str__(self) -> str:
        return self.url


def _file_path(url: str) -> str:
    """The path of a ``file:`` URL: ``file:///a`` and ``file://localhost/a`` are ``/a``,
    ``file:/a`` too; ``file://rel/a`` is the relative ``rel/a`` (as fsspec reads it)."""
    rest = url[len("file:") :]
    if rest.startswith("//"):
        rest = rest[2:]
        if rest.startswith("localhost/"):
            rest = rest[len("localhost") :]
    return rest or "."


@dataclass(frozen=True)
class OutputPair:
    """A writer's ``out``: the local directory written to, and the remote mirrored to.

    ``local`` is ``None`` for a remote-only ``out`` (the writer stages in a temporary
    directory); ``remote`` is ``None`` for local-only output.
    """

    local: str | None
    remote: Location | None


def parse_out(out: str | os.PathLike[str] | tuple[str, str] | list[str]) -> OutputPair:
    """Interprets a writer's, converter's or ``merge_index``'s ``out`` argument.

    A local path or ``file://`` URL is local-only output; a remote URL is remote-only; a
    ``(local, remote)`` pair is used as given (the local part may be a ``file://`` URL).

    Raises:
        ValueError: If ``out`` is a sequence of the wrong length, or its local part is remote.
    """
    if isinstance(out, (str, os.PathLike)):
        where = Location.parse(out)
        if where.is_remote:
            return OutputPair(None, where)
        return OutputPair(where.local_path, None)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise ValueError(
            "Invalid `out` argument. It is either a string of local/remote directory or a "
            f"list of two strings with [local, remote], got {out!r}."
        )
    local = Location.parse(out[0])
    if local.is_remote:
        raise ValueError(f"The local part of `out` is a remote URL: {out[0]!r}")
    return OutputPair(local.local_path, Location.parse(out[1]))
