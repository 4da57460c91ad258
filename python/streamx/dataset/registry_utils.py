"""Named registries of classes and functions, as mosaicml-streaming (and llm-foundry) keep them.

They are `catalogue <https://github.com/explosion/catalogue>`_ registries, so names can
also come from installed packages' entry points (group ``"<namespace joined by _>"``), and
``save_registry`` snapshots catalogue's global table.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

import catalogue

__all__ = [
    "TypedRegistry",
    "construct_from_registry",
    "create_registry",
    "import_file",
    "save_registry",
]

T = TypeVar("T")
TypeT = TypeVar("TypeT", bound=type)


class TypedRegistry(catalogue.Registry, Generic[T]):  # type: ignore[misc]
    """A catalogue registry whose entries are typed ``T``, with a description.

    Args:
        namespace: The registry's path in catalogue's global table.
        entry_points: Whether installed packages may add entries through entry points.
        description: What the registry holds.

    Examples:
        >>> reg = TypedRegistry[type](("streamx", "doc_example"), description="demo")
        >>> reg.register("int", func=int)
        <class 'int'>
        >>> reg.get("int")
        <class 'int'>
    """

    def __init__(
        self, namespace: Sequence[str], entry_points: bool = False, description: str = ""
    ) -> None:
        super().__init__(namespace, entry_points=entry_points)
        self.description = description

    def __call__(self, name: str, func: T | None = None) -> Callable[[T], T]:
        """Registers ``func`` as ``name``, or returns a decorator that does."""
        decorator: Callable[[T], T] = super().__call__(name, func)
        return decorator

    def register(self, name: str, *, func: T | None = None) -> T:
        """Registers ``func`` as ``name``; without ``func``, returns a decorator."""
        registered: T = super().register(name, func=func)
        return registered

    def register_class(self, name: str, *, func: TypeT | None = None) -> TypeT:
        """Registers the class ``func`` as ``name``."""
        registered: TypeT = super().register(name, func=func)
        return registered

    def get(self, name: str) -> T:
        """The entry ``name`` (entry points included).

        Raises:
            catalogue.RegistryError: Nothing is registered as ``name``.
        """
        entry: T = super().get(name)
        return entry

    def get_all(self) -> dict[str, T]:
        """Every entry, by name."""
        entries: dict[str, T] = super().get_all()
        return entries

    def get_entry_point(self, name: str, default: T | None = None) -> T:
        """The entry point ``name`` of this registry's group, or ``default``."""
        entry: T = super().get_entry_point(name, default=default)
        return entry

    def get_entry_points(self) -> dict[str, T]:
        """Every entry point of this registry's group, by name."""
        entries: dict[str, T] = super().get_entry_points()
        return entries


def create_registry(
    *namespace: str, generic_type: type[T], entry_points: bool = False, description: str = ""
) -> TypedRegistry[T]:
    """A new registry at ``namespace``.

    Args:
        *namespace: Its path, e.g. ``"streamx", "streams_registry"``.
        generic_type: The type of its entries (for type checkers only).
        entry_points: Whether installed packages may add entries through entry points.
        description: What it holds.

    Raises:
        catalogue.RegistryError: A registry already exists at ``namespace``.
    """
    if catalogue.check_exists(*namespace):
        raise catalogue.RegistryError(f"Namespace already exists: {namespace}")
    return TypedRegistry[generic_type](  # type: ignore[valid-type]
        namespace, entry_points=entry_points, description=description
    )


def construct_from_registry(
    name: str,
    registry: TypedRegistry[Any],
    partial_function: bool = True,
    pre_validation_function: Callable[[Any], None] | type | None = None,
    post_validation_function: Callable[[Any], None] | None = None,
    kwargs: dict[str, Any] | None = None,
) -> Any:
    """Builds the entry ``name`` of ``registry`` with ``kwargs``.

    A registered class (or, with ``partial_function=False``, any callable) is called with
    ``kwargs``; a registered function is otherwise bound to them with ``functools.partial``.

    Args:
        name: The entry's name.
        registry: Where it is registered.
        partial_function: Bind functions with ``functools.partial`` instead of calling them.
        pre_validation_function: A class the entry must subclass, or a function that checks
            the entry and raises if it is unfit.
        post_validation_function: A function that checks the built item and raises if unfit.
        kwargs: Keyword arguments for the entry.

    Returns:
        The built item.

    Raises:
        ValueError: The entry is not a subclass of ``pre_validation_function``, the latter is
            neither a class nor callable, or the entry is not callable.
        catalogue.RegistryError: Nothing is registered as ``name``.

    Examples:
        >>> from streamx.dataset.registry import streams_registry
        >>> stream = construct_from_registry("stream", streams_registry, kwargs={"local": "/tmp/x"})
        >>> stream.local
        '/tmp/x'
    """
    kwargs = kwargs or {}
    entry = registry.get(name)
    _pre_validate(name, entry, pre_validation_function)
    if isinstance(entry, type) or (callable(entry) and not partial_function):
        item = entry(**kwargs)
    elif callable(entry):
        item = functools.partial(entry, **kwargs)
    else:
        raise ValueError(f"Expected {name} to be a class or function, but got {type(entry)}")
    if post_validation_function is not None:
        post_validation_function(item)
    return item


def _pre_validate(name: str, entry: Any, check: Callable[[Any], None] | type | None) -> None:
    if check is None:
        return
    if isinstance(check, type):
        if not (isinstance(entry, type) and issubclass(entry, check)):
            raise ValueError(f"Expected {name} to be of type {check}, but got {type(entry)}")
    elif callable(check):
        check(entry)
    else:
        raise ValueError(
            f"Expected pre_validation_function to be a callable or a type, but got {type(check)}"
        )


def import_file(loc: str | Path) -> ModuleType:
    """Runs the Python file ``loc`` as a fresh module and returns it (so it can register entries).

    Raises:
        FileNotFoundError: ``loc`` does not exist.
        RuntimeError: Running it raised; the cause is chained.
    """
    if not os.path.exists(loc):
        raise FileNotFoundError(f"File {loc} does not exist.")
    spec = importlib.util.spec_from_file_location("python_code", str(loc))
    if spec is None or spec.loader is None:
        raise RuntimeError(f"Cannot import {loc} as a Python module.")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise RuntimeError(f"Error executing {loc}") from err
    return module


@contextmanager
def save_registry() -> Iterator[None]:
    """Restores catalogue's global table, as it was on entry, when the block exits."""
    saved = copy.deepcopy(catalogue.REGISTRY)
    yield
    catalogue.REGISTRY = saved
