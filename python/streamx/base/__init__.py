"""``streamx.base`` mirrors mosaicml-streaming's ``streaming.base`` module paths.

Code written against ``streaming.base.*`` runs after renaming ``streaming`` to ``streamx``.
Every module here is a thin view of streamx's own code. ``streamx.base.storage`` is
imported only when asked for.
"""

from streamx.dataset.local import LocalDataset
from streamx.dataset.stream import Stream
from streamx.dataset.streaming import StreamingDataset
from streamx.format.writers import CSVWriter, JSONWriter, MDSWriter, TSVWriter, XSVWriter
from streamx.lazy_names import lazy_names

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


# StreamingDataLoader needs torch, which streamx does not require; load it when asked.
__getattr__, __dir__ = lazy_names(
    __name__, {"StreamingDataLoader": "streamx.torch.dataloader"}, globals()
)
