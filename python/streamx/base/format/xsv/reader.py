"""mosaicml-streaming's ``streaming.base.format.xsv.reader``."""

from typing import ClassVar

from streamx.base.format.base.reader import SplitReader

__all__ = ["CSVReader", "TSVReader", "XSVReader"]


class XSVReader(SplitReader):
    """Random access to the samples of one separated-values shard (see :class:`Reader`)."""

    formats: ClassVar[tuple[str, ...]] = ("xsv",)


class CSVReader(XSVReader):
    """Random access to the samples of one CSV shard."""

    formats: ClassVar[tuple[str, ...]] = ("csv",)


class TSVReader(XSVReader):
    """Random access to the samples of one TSV shard."""

    formats: ClassVar[tuple[str, ...]] = ("tsv",)
