"""mosaicml-streaming's ``streaming.base.format.base.reader``:
:mod:`streamx.dataset.mosaic_readers.reader`."""

from streamx.dataset.mosaic_readers.reader import (
    FileInfo,
    JointReader,
    Reader,
    SplitReader,
    file_info,
)

__all__ = [
    "FileInfo",
    "JointReader",
    "Reader",
    "SplitReader",
    "file_info",
]
