"""mosaicml-streaming's ``streaming.base.format.base``."""

from streamx.base.format.base.reader import FileInfo, Reader

__all__ = ["FileInfo", "Reader"]
