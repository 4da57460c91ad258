"""mosaicml-streaming's ``streaming.base.format.mds``."""

from streamx.base.format.mds.reader import MDSReader
from streamx.base.format.mds.writer import MDSWriter

__all__ = ["MDSReader", "MDSWriter"]
