"""mosaicml-streaming's ``streaming.base.format.mds.writer``: streamx's ``MDSWriter``."""

from streamx.format.writers.mds import MDSWriter

__all__ = ["MDSWriter"]
