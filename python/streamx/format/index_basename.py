"""The index file's name as mosaicml-streaming's ``get_index_basename`` gives it
(``streamx.base.format.index`` re-exports it)."""

from streamx.format.index import INDEX_BASENAME

__all__ = ["get_index_basename"]


def get_index_basename() -> str:
    """The name of a dataset's index file, ``'index.json'``."""
    return INDEX_BASENAME
