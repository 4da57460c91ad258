"""A LitData sample's structure: the pytree spec its ``index.json`` stores as JSON.

``litdata.optimize`` flattens each sample (a dict, list or tuple of values, nested) into
leaves, serializes the leaves in order, and records the structure once, as a JSON
"treespec" (protocol 1): ``[1, {"type": "builtins.dict", "context": "[\\"a\\", \\"b\\"]",
"children_spec": [...]}]``, where a leaf has ``"type": null``. This rebuilds a sample
from its leaves.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

__all__ = ["Spec", "parse_spec"]

_CONTAINERS = ("builtins.dict", "builtins.list", "builtins.tuple", "collections.OrderedDict")


class Spec:
    """A parsed treespec node."""

    def __init__(self, kind: str | None, keys: list[Any], children: list[Spec]) -> None:
        self.kind, self.keys, self.children = kind, keys, children

    @property
    def leaves(self) -> int:
        return 1 if self.kind is None else sum(c.leaves for c in self.children)

    def build(self, leaves: Iterator[Any]) -> Any:
        """The value this node describes, taking its leaves in order from ``leaves``."""
        if self.kind is None:
            return next(leaves)
        values = [child.build(leaves) for child in self.children]
        if self.kind == "builtins.dict":
            return dict(zip(self.keys, values))
        if self.kind == "collections.OrderedDict":
            return OrderedDict(zip(self.keys, values))
        return values if self.kind == "builtins.list" else tuple(values)


def _node(raw: Any, shown: str) -> Spec:
    if not isinstance(raw, dict) or not isinstance(raw.get("children_spec", []), list):
        raise ValueError(f"{shown}: a data_spec node is not an object with children_spec")
    kind = raw.get("type")
    if kind is None:
        return Spec(None, [], [])
    if kind not in _CONTAINERS:
        raise ValueError(
            f"{shown}: samples of type {kind} are not read in place (only dicts, lists and tuples)"
        )
    context = raw.get("context")
    keys = json.loads(context) if isinstance(context, str) and context != "null" else []
    children = [_node(child, shown) for child in raw["children_spec"]]
    if kind in ("builtins.dict", "collections.OrderedDict") and len(keys) != len(children):
        raise ValueError(f"{shown}: a dict node has {len(keys)} keys and {len(children)} values")
    return Spec(kind, list(keys or []), children)


def parse_spec(text: str, shown: str) -> Spec:
    """The spec in ``text`` (the ``data_spec`` string of a LitData ``index.json``).

    Raises:
        ValueError: Naming ``shown``, if it is not a protocol-1 treespec of dicts, lists and
            tuples.
    """
    try:
        protocol, root = json.loads(text)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{shown}: data_spec is not a LitData treespec ({err})") from err
    if protocol != 1:
        raise ValueError(f"{shown}: data_spec protocol {protocol} is not read (only 1)")
    return _node(root, shown)
