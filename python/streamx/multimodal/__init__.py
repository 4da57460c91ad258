"""Multimodal datasets with mosaicml-streaming's ``streaming.multimodal`` classes' API."""

from streamx.multimodal.webvid import (
    StreamingInsideWebVid,
    StreamingOutsideDTWebVid,
    StreamingOutsideGIWebVid,
)

__all__ = ["StreamingInsideWebVid", "StreamingOutsideDTWebVid", "StreamingOutsideGIWebVid"]
