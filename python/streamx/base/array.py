"""mosaicml-streaming's ``streaming.base.array``: :class:`Array` is streamx's own."""

from streamx.dataset.array import Array

__all__ = ["Array"]
