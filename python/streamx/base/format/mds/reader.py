"""mosaicml-streaming's ``streaming.base.format.mds.reader``:
:mod:`streamx.dataset.mosaic_readers`."""

from streamx.dataset.mosaic_readers.mds_reader import (
    MDSReader,
)

__all__ = [
    "MDSReader",
]
