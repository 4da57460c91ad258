"""Submodules made from a table, for paths that only re-export names.

mosaicml-streaming has one module per algorithm (``streaming.base.shuffle.py1e``...); each
holds one function. ``streamx.base`` mirrors those paths without one file per algorithm: its
package registers them here, so ``import streamx.base.shuffle.py1e`` finds the module the
package's import put in ``sys.modules``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping

__all__ = ["add_submodules"]


def add_submodules(package: str, table: Mapping[str, Mapping[str, object]]) -> None:
    """Registers ``<package>.<name>`` for each entry of `table`, holding its names.

    Args:
        package: The (already imported) package the submodules belong to.
        table: Submodule name to the names it exports, which become its ``__all__``.

    Examples:
        >>> import json
        >>> add_submodules("json", {"views_example": {"dumps": json.dumps}})
        >>> from json.views_example import dumps
        >>> dumps is json.dumps
        True
    """
    parent = sys.modules[package]
    for name, names in table.items():
        full = f"{package}.{name}"
        module = types.ModuleType(full, f"``{full}``: {', '.join(names)}.")
        module.__dict__.update(names)
        module.__all__ = list(names)  # type: ignore[attr-defined]
        sys.modules[full] = module
        setattr(parent, name, module)
