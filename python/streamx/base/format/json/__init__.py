"""mosaicml-streaming's ``streaming.base.format.json``."""

from streamx.dataset.mosaic_readers.json_reader import JSONReader
from streamx.format.writers.json_writer import JSONWriter

__all__ = ["JSONReader", "JSONWriter"]
