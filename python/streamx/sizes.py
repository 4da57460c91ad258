"""Human-readable size strings: bytes (1024-based) and sample counts (1000-based)."""

from __future__ import annotations

_BYTE_UNITS = ("b", "kb", "mb", "gb", "tb", "pb", "eb", "zb", "yb")
_COUNT_UNITS = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def bytes_to_int(value: int | str) -> int:
    """Parses a byte size such as ``1024``, ``'64mb'`` or ``'10GB'`` (powers of 1024).

    Args:
        value: An int, a string of digits, or digits followed by a unit from ``b`` to ``yb``.

    Returns:
        The size in bytes.

    Raises:
        ValueError: If the string is not a number with a known unit.
    """
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    try:
        return int(float(text))
    except ValueError:
        pass
    for power, unit in reversed(list(enumerate(_BYTE_UNITS))):
        if text.endswith(unit):
            number = text[: -len(unit)].strip()
            try:
                return int(float(number) * 1024**power)
            except ValueError:
                break
    raise ValueError(
        f"Unsupported value/suffix {value}. Supported suffix are {list(_BYTE_UNITS)} in either "
        "lowercase or uppercase format."
    )


def number_abbrev_to_int(value: int | str) -> int:
    """Parses a sample count such as ``100``, ``'100k'`` or ``'1.5m'`` (powers of 1000).

    Args:
        value: An int, a string of digits, or digits followed by ``k``, ``m``, ``b`` or ``t``.

    Returns:
        The count.

    Raises:
        ValueError: If the string is not a number with a known abbreviation.
    """
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    try:
        return int(float(text))
    except ValueError:
        pass
    unit = text[-1:]
    if unit in _COUNT_UNITS:
        try:
            return int(float(text[:-1]) * _COUNT_UNITS[unit])
        except ValueError:
            pass
    raise ValueError(
        f"Unsupported value/suffix {value}. Supported suffix are {list(_COUNT_UNITS)} in either "
        "lowercase or uppercase format."
    )
