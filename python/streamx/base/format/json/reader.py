"""mosaicml-streaming's ``streaming.base.format.json.reader``:
:mod:`streamx.dataset.mosaic_readers`."""

from streamx.dataset.mosaic_readers.json_reader import (
    JSONReader,
)

__all__ = [
    "JSONReader",
]
