"""mosaicml-streaming's ``streaming.base.format.index``: :mod:`streamx.format.index_basename`."""

from streamx.format.index import INDEX_BASENAME as INDEX_BASENAME
from streamx.format.index_basename import (
    get_index_basename,
)

__all__ = [
    "get_index_basename",
]
