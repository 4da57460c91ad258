"""mosaicml-streaming's ``streaming.base.format.json.writer``: streamx's ``JSONWriter``."""

from streamx.format.writers.json_writer import JSONWriter

__all__ = ["JSONWriter"]
