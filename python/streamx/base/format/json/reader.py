"""mosaicml-streaming's ``streaming.base.format.json.reader``:
:mod:`streamx.dataset.mosaic_readers`."""

from streamx.dataset.mosaic_readers.json_reader import (
    JSONReader,
)
from streamx.dataset.mosaic_readers.json_reader import (
    SplitReader as SplitReader,
)
from streamx.dataset.mosaic_readers.json_reader import (
    file_info as file_info,
)

__all__ = [
    "JSONReader",
]
