"""mosaicml-streaming's ``streaming.base.format.mds.reader``."""

from streamx.base.format.base.reader import JointReader

__all__ = ["MDSReader"]


class MDSReader(JointReader):
    """Random access to the samples of one MDS shard (see :class:`Reader`)."""
