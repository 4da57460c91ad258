"""streamx: stream training data from object stores into PyTorch, fast.

A drop-in replacement for mosaicml-streaming: the same MDS format, API and sample order.
"""

from streamx._core import __version__
from streamx.dataset.local import LocalDataset
from streamx.dataset.stream import Stream
from streamx.dataset.streaming import StreamingDataset
from streamx.format.writers import CSVWriter, JSONWriter, MDSWriter, TSVWriter, XSVWriter

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
        from streamx.torch.dataloader import StreamingDataLoader

        return StreamingDataLoader
    raise AttributeError(f"module 'streamx' has no attribute {name!r}")
