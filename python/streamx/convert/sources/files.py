"""Listing input files at any fsspec URL: one file, a directory (recursively) or a glob."""

from __future__ import annotations

import fsspec
from fsspec import AbstractFileSystem

from streamx.convert.errors import ConvertError

__all__ = ["list_files", "list_sized_files", "open_fs"]


def open_fs(url: str) -> tuple[AbstractFileSystem, str]:
    """The filesystem serving ``url`` and the path on it."""
    fs, path = fsspec.core.url_to_fs(url)
    return fs, path


def list_files(url: str, suffixes: tuple[str, ...]) -> list[str]:
    """The files at ``url`` whose names end with one of ``suffixes``, sorted, as full URLs.

    Raises:
        ConvertError: Nothing matches, or the location cannot be listed.
    """
    return [name for name, _ in list_sized_files(url, suffixes)]


def list_sized_files(url: str, suffixes: tuple[str, ...]) -> list[tuple[str, int]]:
    """As :func:`list_files`, with each file's size in bytes (from the same listing).

    Raises:
        ConvertError: Nothing matches, or the location cannot be listed.
    """
    fs, path = open_fs(url)
    try:
        if any(ch in path for ch in "*?["):
            found = fs.glob(path, detail=True)
        elif fs.isdir(path):
            found = fs.find(path, detail=True)
        elif fs.exists(path):
            found = {path: fs.info(path)}
        else:
            raise ConvertError(f"Input {url} does not exist.")
    except ConvertError:
        raise
    except Exception as err:
        raise ConvertError(f"Cannot list input {url}: {err}") from err
    files = sorted((p, int(info.get("size") or 0)) for p, info in found.items())
    files = [(p, size) for p, size in files if p.lower().endswith(suffixes)]
    if not files:
        raise ConvertError(f"Input {url} holds no {'/'.join(suffixes)} files.")
    return [(fs.unstrip_protocol(p) if _is_remote(fs) else p, size) for p, size in files]


def _is_remote(fs: AbstractFileSystem) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol not in ("file", "local")
