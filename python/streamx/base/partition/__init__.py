"""mosaicml-streaming's ``streaming.base.partition`` and its per-algorithm modules
(``streamx.base.partition.orig``...): :mod:`streamx.order.partitions`."""

from streamx.module_views import add_submodules
from streamx.order.partitions import algos, get_partitions

__all__ = ["algos", "get_partitions"]

add_submodules(__name__, {algo: {fn.__name__: fn} for algo, fn in algos.items()})
