"""mosaicml-streaming's ``streaming.base.format.base.writer``: streamx's writer bases.

streamx has one base for every writer and one for split formats; MDS, mosaic's only
"joint" format, derives from the general base, which therefore also stands for
``JointWriter``.
"""

from streamx.format.writers.base import Writer
from streamx.format.writers.split import SplitWriter

JointWriter = Writer

__all__ = ["JointWriter", "SplitWriter", "Writer"]
