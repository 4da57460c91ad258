"""Descriptors that serve mosaicml-streaming's public dataset attributes from typed values.

``StreamingDataset`` keeps what its indexes say in one frozen ``DatasetLayout`` and its
order settings in one frozen ``EpochSettings``; these descriptors expose their fields under
the attribute names mosaic users read (``ds.samples_per_shard``, ``ds.num_canonical_nodes``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar, overload

from streamx.dataset.layout import DatasetLayout
from streamx.order.settings import EpochSettings

__all__ = ["LayoutField", "SettingField"]

T = TypeVar("T")


class _HasLayout(Protocol):
    _layout: DatasetLayout


class _HasSettings(Protocol):
    _settings: EpochSettings


class LayoutField(Generic[T]):
    """A read-only field of the owner's ``_layout``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type) -> LayoutField[T]: ...
    @overload
    def __get__(self, obj: _HasLayout, owner: type) -> T: ...
    def __get__(self, obj: _HasLayout | None, owner: type) -> T | LayoutField[T]:
        if obj is None:
            return self
        value: T = getattr(obj._layout, self._name)
        return value

    def __set__(self, obj: _HasLayout, value: T) -> None:
        raise AttributeError(f"{self._name} is fixed once the dataset's indexes are read")


class SettingField(Generic[T]):
    """A field of the owner's current ``_settings``; assigning it replaces the settings."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type) -> SettingField[T]: ...
    @overload
    def __get__(self, obj: _HasSettings, owner: type) -> T: ...
    def __get__(self, obj: _HasSettings | None, owner: type) -> T | SettingField[T]:
        if obj is None:
            return self
        value: T = getattr(obj._settings, self._name)
        return value

    def __set__(self, obj: _HasSettings, value: T) -> None:
        # The field is named at run time; the annotation on the owner class gives its type.
        changes: dict[str, Any] = {self._name: value}
        obj._settings = replace(obj._settings, **changes)
