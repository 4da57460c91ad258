"""Datasets over MDS shards: ``Stream``, ``StreamingDataset`` and ``LocalDataset``."""

from streamx.dataset.local import LocalDataset
from streamx.dataset.stream import Stream
from streamx.dataset.streaming import StreamingDataset

__all__ = ["LocalDataset", "Stream", "StreamingDataset"]
