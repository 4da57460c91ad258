"""streamx: stream training data from object stores into PyTorch, fast.

A drop-in replacement for mosaicml-streaming: the same MDS format, API and sample order.
"""

from streamx._core import __version__
from streamx.dataset import StreamingDataset
from streamx.local import LocalDataset
from streamx.stream import Stream
from streamx.writers import CSVWriter, JSONWriter, MDSWriter, TSVWriter, XSVWriter

__all__ = [
    "CSVWriter",
    "JSONWriter",
    "LocalDataset",
    "MDSWriter",
    "Stream",
    "StreamingDataset",
    "TSVWriter",
    "XSVWriter",
    "__version__",
]
