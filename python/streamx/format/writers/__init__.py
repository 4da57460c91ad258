"""Dataset writers: MDS (joint shards) and JSON/CSV/TSV/XSV (split shards)."""

from streamx.format.writers.json_writer import JSONWriter
from streamx.format.writers.mds import MDSWriter
from streamx.format.writers.xsv import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVWriter", "JSONWriter", "MDSWriter", "TSVWriter", "XSVWriter"]
