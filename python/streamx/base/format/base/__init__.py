"""mosaicml-streaming's ``streaming.base.format.base``."""

from streamx.dataset.mosaic_readers.reader import FileInfo, Reader

__all__ = ["FileInfo", "Reader"]
