"""mosaicml-streaming's ``streaming.base.format.xsv.reader``:
:mod:`streamx.dataset.mosaic_readers`."""

from streamx.dataset.mosaic_readers.xsv_reader import (
    CSVReader,
    TSVReader,
    XSVReader,
)
from streamx.dataset.mosaic_readers.xsv_reader import (
    SplitReader as SplitReader,
)
from streamx.dataset.mosaic_readers.xsv_reader import (
    file_info as file_info,
)

__all__ = [
    "CSVReader",
    "TSVReader",
    "XSVReader",
]
