"""Compression by algorithm name, with mosaicml-streaming's ``streaming.base.compression`` API
(``streamx.base.compression`` re-exports it), over the Rust codecs of ``streamx._core``.

Algorithms are named ``"<codec>"`` or ``"<codec>:<level>"``: ``br``, ``bz2``, ``gz``,
``snappy`` and ``zstd``, with the same levels mosaicml-streaming accepts.
"""

from __future__ import annotations

from streamx import _core

__all__ = [
    "compress",
    "decompress",
    "get_compression_extension",
    "get_compressions",
    "is_compression",
]


def get_compressions() -> set[str]:
    """Every supported ``codec`` and ``codec:level`` name."""
    return set(_core.compression_names())


def is_compression(algo: str | None) -> bool:
    """Whether ``algo`` names a supported codec (and level); ``None`` is not one."""
    return algo is not None and _core.is_compression(algo)


def _check(algo: str) -> None:
    if not is_compression(algo):
        raise ValueError(f"{algo} is not a supported compression algorithm.")


def get_compression_extension(algo: str) -> str:
    """The file extension compressed files get, e.g. ``"zstd"`` for ``"zstd:7"``.

    Raises:
        ValueError: ``algo`` is not supported.
    """
    _check(algo)
    return _core.compression_extension(algo)


def compress(algo: str | None, data: bytes) -> bytes:
    """``data`` compressed with ``algo``; ``None`` returns it unchanged.

    Raises:
        ValueError: ``algo`` is not supported.

    Examples:
        >>> decompress("zstd:7", compress("zstd:7", b"abc" * 100)) == b"abc" * 100
        True
    """
    if algo is None:
        return data
    _check(algo)
    return _core.compress(algo, data)


def decompress(algo: str | None, data: bytes) -> bytes:
    """``data`` decompressed with ``algo``; ``None`` returns it unchanged.

    Raises:
        ValueError: ``algo`` is not supported, or ``data`` is not valid for it.
    """
    if algo is None:
        return data
    _check(algo)
    return _core.decompress(algo, data)
