"""``streamx.base`` mirrors mosaicml-streaming's ``streaming.base`` module paths.

Code written against ``streaming.base.*`` runs after renaming ``streaming`` to ``streamx``.
Every module here is a thin view of streamx's own code. ``streamx.base.storage`` is
imported only when asked for.
"""

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
]


def __getattr__(name: str) -> object:
    # StreamingDataLoader needs torch, which streamx does not require; load it when asked.
    if name == "StreamingDataLoader":
        from streamx.torch.dataloader import StreamingDataLoader

        return StreamingDataLoader
    raise AttributeError(f"module 'streamx.base' has no attribute {name!r}")
