"""mosaicml-streaming's ``streaming.base.sampling``: :mod:`streamx.order.sampling`."""

from streamx.order.sampling import get_sampling

__all__ = ["get_sampling"]
