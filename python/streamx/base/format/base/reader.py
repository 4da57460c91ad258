"""mosaicml-streaming's ``streaming.base.format.base.reader``:
:mod:`streamx.dataset.mosaic_readers.reader`."""

from streamx.dataset.mosaic_readers.reader import (
    Array as Array,
)
from streamx.dataset.mosaic_readers.reader import (
    ColumnPlan as ColumnPlan,
)
from streamx.dataset.mosaic_readers.reader import (
    FileInfo,
    JointReader,
    Reader,
    SplitReader,
    file_info,
)
from streamx.dataset.mosaic_readers.reader import (
    SampleReader as SampleReader,
)
from streamx.dataset.mosaic_readers.reader import (
    ShardInfo as ShardInfo,
)
from streamx.dataset.mosaic_readers.reader import (
    is_mds_encoding_safe as is_mds_encoding_safe,
)
from streamx.dataset.mosaic_readers.reader import (
    make_reader as make_reader,
)

__all__ = [
    "FileInfo",
    "JointReader",
    "Reader",
    "SplitReader",
    "file_info",
]
