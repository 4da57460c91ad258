"""mosaicml-streaming's ``streaming.base.format.json``."""

from streamx.base.format.json.reader import JSONReader
from streamx.base.format.json.writer import JSONWriter

__all__ = ["JSONReader", "JSONWriter"]
