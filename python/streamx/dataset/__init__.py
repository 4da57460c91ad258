"""Datasets over MDS shards: ``Stream``, ``StreamingDataset`` and ``LocalDataset``.

The two dataset classes subclass torch's dataset types, so they are imported on first use:
``import streamx`` and writing data never import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamx.dataset.stream import Stream
from streamx.lazy_names import lazy_names

if TYPE_CHECKING:
    from streamx.dataset.local import LocalDataset
    from streamx.dataset.streaming import StreamingDataset

__all__ = ["LocalDataset", "Stream", "StreamingDataset"]

# Public name -> module defining it, imported when the name is first read.
_LAZY = {"LocalDataset": "streamx.dataset.local", "StreamingDataset": "streamx.dataset.streaming"}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
