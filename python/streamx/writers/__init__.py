"""Dataset writers: MDS (joint shards) and JSON/CSV/TSV/XSV (split shards)."""

from streamx.writers.json_writer import JSONWriter
from streamx.writers.mds import MDSWriter
from streamx.writers.xsv import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVWriter", "JSONWriter", "MDSWriter", "TSVWriter", "XSVWriter"]
