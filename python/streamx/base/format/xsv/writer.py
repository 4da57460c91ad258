"""mosaicml-streaming's ``streaming.base.format.xsv.writer``: streamx's writers."""

from streamx.format.writers.xsv import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVWriter", "TSVWriter", "XSVWriter"]
