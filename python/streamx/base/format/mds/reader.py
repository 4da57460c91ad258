"""mosaicml-streaming's ``streaming.base.format.mds.reader``:
:mod:`streamx.dataset.mosaic_readers`."""

from streamx.dataset.mosaic_readers.mds_reader import (
    JointReader as JointReader,
)
from streamx.dataset.mosaic_readers.mds_reader import (
    MDSReader,
)
from streamx.dataset.mosaic_readers.mds_reader import (
    file_info as file_info,
)

__all__ = [
    "MDSReader",
]
