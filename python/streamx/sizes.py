"""Human-readable size strings: bytes (1024-based) and sample counts (1000-based)."""

from __future__ import annotations

_BYTE_UNITS = {
    unit: 1024**power
    for power, unit in enumerate(("b", "kb", "mb", "gb", "tb", "pb", "eb", "zb", "yb"))
}
_COUNT_UNITS = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def _parse(value: int | str, units: dict[str, int]) -> int:
    """A plain number, or a number followed by one of ``units`` (any case)."""
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    try:
        return int(float(text))
    except ValueError:
        pass
    # Longest unit first: "kb" also ends with the unit "b".
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            try:
                return int(float(text[: -len(unit)]) * units[unit])
            except ValueError:
                break
    raise ValueError(
        f"Unsupported value/suffix {value}. Supported suffix are {list(units)} in either "
        "lowercase or uppercase format."
    )


def bytes_to_int(value: int | str) -> int:
    """Parses a byte size such as ``1024``, ``'64mb'`` or ``'10GB'`` (powers of 1024).

    Args:
        value: An int, a string of digits, or digits followed by a unit from ``b`` to ``yb``.

    Returns:
        The size in bytes.

    Raises:
        ValueError: If the string is not a number with a known unit.
    """
    return _parse(value, _BYTE_UNITS)


def number_abbrev_to_int(value: int | str) -> int:
    """Parses a sample count such as ``100``, ``'100k'`` or ``'1.5m'`` (powers of 1000).

    Args:
        value: An int, a string of digits, or digits followed by ``k``, ``m``, ``b`` or ``t``.

    Returns:
        The count.

    Raises:
        ValueError: If the string is not a number with a known abbreviation.
    """
    return _parse(value, _COUNT_UNITS)
