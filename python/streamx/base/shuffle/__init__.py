"""mosaicml-streaming's ``streaming.base.shuffle`` and its per-algorithm modules
(``streamx.base.shuffle.py1e``...): :mod:`streamx.order.shuffles`."""

from streamx.module_views import add_submodules
from streamx.order.shuffles import algos, get_shuffle

__all__ = ["algos", "get_shuffle"]

add_submodules(__name__, {algo: {fn.__name__: fn} for algo, fn in algos.items()})
