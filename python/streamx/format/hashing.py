"""Hashes by name, with mosaicml-streaming's ``streaming.base.hashing`` API
(``streamx.base.hashing`` re-exports it), over the Rust hashers of ``streamx._core``.

The names are hashlib's (``md5``, ``sha1``, ``sha256``, ``blake2b``, ``sha3_256``, ...) and
xxhash's (``xxh32``, ``xxh64``, ``xxh128``, ``xxh3_64``, ``xxh3_128``).
"""

from __future__ import annotations

from streamx import _core

__all__ = ["get_hash", "get_hashes", "is_hash"]


def get_hashes() -> set[str]:
    """Every supported hash algorithm name."""
    return set(_core.hash_names())


def is_hash(algo: str) -> bool:
    """Whether ``algo`` is a supported hash algorithm."""
    return algo in get_hashes()


def get_hash(algo: str, data: bytes) -> str:
    """The hex digest of ``data`` under ``algo``.

    Raises:
        ValueError: ``algo`` is not supported.

    Examples:
        >>> get_hash("md5", b"")
        'd41d8cd98f00b204e9800998ecf8427e'
    """
    if not is_hash(algo):
        raise ValueError(f"{algo} is not a supported hash algorithm.")
    return _core.hexdigest(algo, data)
