"""mosaicml-streaming's ``streaming.base.format.index``."""

from streamx.format.index import INDEX_BASENAME

__all__ = ["get_index_basename"]


def get_index_basename() -> str:
    """The name of a dataset's index file, ``'index.json'``."""
    return INDEX_BASENAME
