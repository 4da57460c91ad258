"""mosaicml-streaming's ``streaming.base.format``: streamx's writers, the per-shard readers of
:mod:`streamx.dataset.mosaic_readers`, and the index name."""

from streamx.dataset.mosaic_readers.from_json import reader_from_json
from streamx.dataset.mosaic_readers.json_reader import JSONReader as JSONReader
from streamx.dataset.mosaic_readers.mds_reader import MDSReader as MDSReader
from streamx.dataset.mosaic_readers.reader import FileInfo, Reader
from streamx.dataset.mosaic_readers.xsv_reader import CSVReader as CSVReader
from streamx.dataset.mosaic_readers.xsv_reader import TSVReader as TSVReader
from streamx.dataset.mosaic_readers.xsv_reader import XSVReader as XSVReader
from streamx.format.index_basename import get_index_basename
from streamx.format.writers import CSVWriter, JSONWriter, MDSWriter, TSVWriter, XSVWriter

__all__ = [
    "CSVWriter",
    "FileInfo",
    "JSONWriter",
    "MDSWriter",
    "Reader",
    "TSVWriter",
    "XSVWriter",
    "get_index_basename",
    "reader_from_json",
]
