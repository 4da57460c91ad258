"""mosaicml-streaming's ``streaming.base.spanner``: :class:`Spanner` is streamx's own."""

from streamx.dataset.spanner import Spanner

__all__ = ["Spanner"]
