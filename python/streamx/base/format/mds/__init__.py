"""mosaicml-streaming's ``streaming.base.format.mds``."""

from streamx.dataset.mosaic_readers.mds_reader import MDSReader
from streamx.format.writers.mds import MDSWriter

__all__ = ["MDSReader", "MDSWriter"]
