"""mosaicml-streaming's ``streaming.base.dataset``: :class:`StreamingDataset` is streamx's own."""

from streamx.dataset.streaming import StreamingDataset

__all__ = ["StreamingDataset"]
