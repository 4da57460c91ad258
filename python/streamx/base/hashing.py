"""mosaicml-streaming's ``streaming.base.hashing``: :mod:`streamx.format.hashing`."""

from streamx.format.hashing import (
    get_hash,
    get_hashes,
    is_hash,
)

__all__ = [
    "get_hash",
    "get_hashes",
    "is_hash",
]
