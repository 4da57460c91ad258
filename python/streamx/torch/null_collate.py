"""torch's ``default_collate`` refuses a null (``None``: a nullable Parquet column's value, or
a user's sample) with an error that names neither its column nor its sample, such as "Could
not infer dtype of NoneType". The loader's collation raises the same error type, naming
both and keeping torch's message; a null is not turned into a value (a column would change
type from one batch to the next). Every other error, and every batch, is torch's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch.utils.data import default_collate

__all__ = ["collate_column", "collate_samples"]

# The errors default_collate raises for a value it cannot batch (a first None: TypeError; a
# later one: RuntimeError from the tensor it builds).
_REFUSED = (TypeError, RuntimeError)


def collate_samples(samples: list[Any]) -> Any:
    """``default_collate(samples)``; its refusal of a null names the column and sample."""
    try:
        return default_collate(samples)
    except _REFUSED as err:
        named = _null_in_samples(samples) if type(err) in _REFUSED else None
        if named is None:
            raise
        raise named from err


def collate_column(values: list[Any], name: str) -> Any:
    """``default_collate`` of one column's values in a batch; its refusal of a null names the
    column and sample."""
    try:
        return default_collate(values)
    except _REFUSED as err:
        named = _null_error(err, name, values)
        if named is None:
            raise
        raise named from err


def _null_in_samples(samples: list[Any]) -> Exception | None:
    """The named error for the column whose values default_collate refuses (the first, as
    torch goes through a dict's keys), if it holds a null."""
    first = samples[0]
    if not isinstance(first, Mapping) or not all(isinstance(s, Mapping) for s in samples):
        return None
    for name in first:
        values = [sample.get(name) for sample in samples]
        try:
            default_collate(values)
        except _REFUSED as err:
            return _null_error(err, str(name), values)
    return None


def _null_error(err: Exception, name: str, values: list[Any]) -> Exception | None:
    position = next((i for i, value in enumerate(values) if value is None), None)
    if position is None or type(err) not in _REFUSED:
        return None
    return type(err)(
        f"column {name!r} is None (a null) in sample {position} of its batch: torch's "
        f"default_collate cannot batch it ({err}). Fill the column's nulls, or give the "
        "loader a collate_fn that takes them."
    )
