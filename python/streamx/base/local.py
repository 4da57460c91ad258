"""mosaicml-streaming's ``streaming.base.local``: :class:`LocalDataset` is streamx's own."""

from streamx.dataset.local import LocalDataset

__all__ = ["LocalDataset"]
