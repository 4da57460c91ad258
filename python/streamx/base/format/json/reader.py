"""mosaicml-streaming's ``streaming.base.format.json.reader``."""

from typing import ClassVar

from streamx.base.format.base.reader import SplitReader

__all__ = ["JSONReader"]


class JSONReader(SplitReader):
    """Random access to the samples of one JSON-lines shard (see :class:`Reader`)."""

    formats: ClassVar[tuple[str, ...]] = ("json",)
