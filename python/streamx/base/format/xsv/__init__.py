"""mosaicml-streaming's ``streaming.base.format.xsv``."""

from streamx.dataset.mosaic_readers.xsv_reader import CSVReader, TSVReader, XSVReader
from streamx.format.writers.xsv import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVReader", "CSVWriter", "TSVReader", "TSVWriter", "XSVReader", "XSVWriter"]
