"""mosaicml-streaming's ``streaming.base.format.xsv.reader``:
:mod:`streamx.dataset.mosaic_readers`."""

from streamx.dataset.mosaic_readers.xsv_reader import (
    CSVReader,
    TSVReader,
    XSVReader,
)

__all__ = [
    "CSVReader",
    "TSVReader",
    "XSVReader",
]
