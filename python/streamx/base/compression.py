"""mosaicml-streaming's ``streaming.base.compression``: :mod:`streamx.format.compression`."""

from streamx.format.compression import (
    compress,
    decompress,
    get_compression_extension,
    get_compressions,
    is_compression,
)

__all__ = [
    "compress",
    "decompress",
    "get_compression_extension",
    "get_compressions",
    "is_compression",
]
