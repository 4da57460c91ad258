"""mosaicml-streaming's ``streaming.base.stream``: :class:`Stream` and ``streams_registry``."""

from streamx.dataset.registry import streams_registry
from streamx.dataset.stream import Stream

__all__ = ["Stream", "streams_registry"]
