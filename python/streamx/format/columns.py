"""How each MDS column is handled: natively in Rust, or by a Python :class:`Encoding`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamx import _core
from streamx.format.encodings import (
    get_coder,
    get_mds_encoded_size,
    get_mds_encodings,
    is_builtin_coder,
    is_mds_encoding,
)

__all__ = ["ColumnPlan", "native_kind"]

# Encodings the Rust core frames and decodes itself; everything else crosses as raw bytes.
_NATIVE = frozenset(_core.native_encoding_names())


def native_kind(encoding: str) -> str:
    """Returns the Rust column kind for an encoding: its own name, or ``'raw'``.

    A built-in name the user re-registered in ``_encodings`` is ``'raw'``: their class
    encodes and decodes it, in Python.
    """
    return encoding if encoding in _NATIVE and is_builtin_coder(encoding) else "raw"


@dataclass(frozen=True)
class ColumnPlan:
    """The sorted columns of one schema and which of them Python must encode or decode."""

    names: tuple[str, ...]
    encodings: tuple[str, ...]
    sizes: tuple[int | None, ...]
    kinds: tuple[str, ...]
    python_columns: tuple[tuple[str, Any], ...]

    @classmethod
    def from_columns(cls, columns: dict[str, str]) -> ColumnPlan:
        """Builds the plan for a writer's ``columns``, validating each encoding.

        Raises:
            TypeError: If a column's encoding is not registered (mosaicml-streaming's type).
        """
        names = tuple(sorted(columns))
        for name in names:
            if not is_mds_encoding(columns[name]):
                raise TypeError(
                    f"MDSWriter passed column `{name}` with encoding `{columns[name]}` is "
                    f"unsupported. Supported encodings are {get_mds_encodings()}"
                )
        encodings = tuple(columns[name] for name in names)
        sizes = tuple(get_mds_encoded_size(enc) for enc in encodings)
        return cls.from_index(names, encodings, sizes)

    @classmethod
    def from_index(cls, names: Any, encodings: Any, sizes: Any) -> ColumnPlan:
        """Builds the plan for the columns recorded in an index entry."""
        kinds = tuple(native_kind(enc) for enc in encodings)
        python_columns = tuple(
            (name, get_coder(enc))
            for name, enc, kind in zip(names, encodings, kinds)
            if kind == "raw"
        )
        return cls(tuple(names), tuple(encodings), tuple(sizes), kinds, python_columns)
