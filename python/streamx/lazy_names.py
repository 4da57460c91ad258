"""Names of a package that import their module when first read (PEP 562), so that importing
the package does not pay for what a caller may never use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping

__all__ = ["lazy_names"]


def lazy_names(
    package: str, modules: Mapping[str, str], namespace: MutableMapping[str, object]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose ``namespace`` (its
    ``globals()``) gains each name of ``modules`` (name -> defining module) on first read."""

    def getattr_(name: str) -> object:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later reads skip this hook
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *modules})

    return getattr_, dir_
