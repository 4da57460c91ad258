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
    "StreamingDataLoader",
    "StreamingDataset",
    "TSVWriter",
    "XSVWriter",
    "__version__",
]


def __getattr__(name: str) -> object:
    # StreamingDataLoader needs torch; import it only when asked for, so streamx works without.
    if name == "StreamingDataLoader":
        from streamx.dataloader import StreamingDataLoader

        return StreamingDataLoader
    raise AttributeError(f"module 'streamx' has no attribute {name!r}")
