"""mosaicml-streaming's ``streaming.base.format.xsv``."""

from streamx.base.format.xsv.reader import CSVReader, TSVReader, XSVReader
from streamx.base.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVReader", "CSVWriter", "TSVReader", "TSVWriter", "XSVReader", "XSVWriter"]
