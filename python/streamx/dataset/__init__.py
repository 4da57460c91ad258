"""Datasets over MDS shards: ``Stream``, ``StreamingDataset`` and ``LocalDataset``.

The two dataset classes subclass torch's dataset types, so they are imported on first use:
``import streamx`` and writing data never import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from streamx.dataset.stream import Stream

if TYPE_CHECKING:
    from streamx.dataset.local import LocalDataset
    from streamx.dataset.streaming import StreamingDataset

__all__ = ["LocalDataset", "Stream", "StreamingDataset"]

# Public name -> module defining it, imported when the name is first read.
_LAZY = {"LocalDataset": "streamx.dataset.local", "StreamingDataset": "streamx.dataset.streaming"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streamx.dataset' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later reads skip this hook
    return value
