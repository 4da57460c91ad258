"""mosaicml-streaming's ``streaming.base.dataloader`` (needs torch, as mosaic's does)."""

from streamx.torch.dataloader import StreamingDataLoader

__all__ = ["StreamingDataLoader"]
