"""mosaicml-streaming's ``streaming.base.batching`` and its per-method modules
(``streamx.base.batching.random``...): :mod:`streamx.dataset.batching_plans`."""

from streamx.dataset.batching_plans import batching_methods, generate_work
from streamx.module_views import add_submodules

__all__ = ["batching_methods", "generate_work"]

add_submodules(__name__, {method: {fn.__name__: fn} for method, fn in batching_methods.items()})
