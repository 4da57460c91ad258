"""streamx: stream training data from object stores into PyTorch, fast.

A drop-in replacement for mosaicml-streaming: the same MDS format, API and sample order.

The names that subclass torch types (``StreamingDataset``, ``LocalDataset``,
``StreamingDataLoader``, ``PackedDataset``, ``MixedDataset``) are imported on first use, so
``import streamx`` and writing data never import torch; the writers are too, so a training
run that only reads does not pay for their imports before its first sample.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamx._core import __version__
from streamx.dataset.stream import Stream
from streamx.lazy_names import lazy_names

if TYPE_CHECKING:
    from streamx.dataset.litdata_stream import LitDataStream
    from streamx.dataset.local import LocalDataset
    from streamx.dataset.parquet_stream import ParquetStream
    from streamx.dataset.streaming import StreamingDataset
    from streamx.dataset.webdataset_stream import WebDatasetStream
    from streamx.format.writers import CSVWriter, JSONWriter, MDSWriter, TSVWriter, XSVWriter
    from streamx.mixture.dataset import MixedDataset
    from streamx.mixture.schedule import MixtureSchedule
    from streamx.packing.dataset import PackedDataset
    from streamx.torch.dataloader import StreamingDataLoader

__all__ = [
    "CSVWriter",
    "JSONWriter",
    "LitDataStream",
    "LocalDataset",
    "MDSWriter",
    "MixedDataset",
    "MixtureSchedule",
    "PackedDataset",
    "ParquetStream",
    "Stream",
    "StreamingDataLoader",
    "StreamingDataset",
    "TSVWriter",
    "WebDatasetStream",
    "XSVWriter",
    "__version__",
]

# Public name -> module defining it, imported when the name is first read.
_LAZY = {
    "CSVWriter": "streamx.format.writers",
    "JSONWriter": "streamx.format.writers",
    "MDSWriter": "streamx.format.writers",
    "TSVWriter": "streamx.format.writers",
    "XSVWriter": "streamx.format.writers",
    "LitDataStream": "streamx.dataset.litdata_stream",
    "LocalDataset": "streamx.dataset.local",
    "MixedDataset": "streamx.mixture.dataset",
    "MixtureSchedule": "streamx.mixture.schedule",
    "PackedDataset": "streamx.packing.dataset",
    "ParquetStream": "streamx.dataset.parquet_stream",
    "WebDatasetStream": "streamx.dataset.webdataset_stream",
    "StreamingDataset": "streamx.dataset.streaming",
    "StreamingDataLoader": "streamx.torch.dataloader",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
