"""Listing input files at any fsspec URL: one file, a directory (recursively) or a glob."""

from __future__ import annotations

import fsspec
from fsspec import AbstractFileSystem

from streamx.convert.errors import ConvertError

__all__ = ["list_files", "open_fs"]


def open_fs(url: str) -> tuple[AbstractFileSystem, str]:
    """The filesystem serving ``url`` and the path on it."""
    fs, path = fsspec.core.url_to_fs(url)
    return fs, path


def list_files(url: str, suffixes: tuple[str, ...]) -> list[str]:
    """The files at ``url`` whose names end with one of ``suffixes``, sorted, as full URLs.

    Raises:
        ConvertError: Nothing matches, or the location cannot be listed.
    """
    fs, path = open_fs(url)
    try:
        if any(ch in path for ch in "*?["):
            found = fs.glob(path)
        elif fs.isdir(path):
            found = fs.find(path)
        elif fs.exists(path):
            found = [path]
        else:
            raise ConvertError(f"Input {url} does not exist.")
    except ConvertError:
        raise
    except Exception as err:
        raise ConvertError(f"Cannot list input {url}: {err}") from err
    files = sorted(p for p in found if p.lower().endswith(suffixes))
    if not files:
        raise ConvertError(f"Input {url} holds no {'/'.join(suffixes)} files.")
    return [fs.unstrip_protocol(p) if _is_remote(fs) else p for p in files]


def _is_remote(fs: AbstractFileSystem) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol not in ("file", "local")
