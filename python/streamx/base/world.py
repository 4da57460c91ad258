"""mosaicml-streaming's ``streaming.base.world``: :mod:`streamx.order.mosaic_world`."""

from streamx.order.mosaic_world import World

__all__ = ["World"]
