"""The simulator's one unit convention, and its checked parsing of user values.

Sizes and rates are binary in and out: ``64MB`` and ``64MiB`` both mean 64 x 2**20 bytes,
as everywhere in streamx, and every size printed is ``KiB``/``MiB``/``GiB``/``TiB``, chosen
by magnitude. Sample counts (``4m``) are decimal. Every parser names the argument it reads
and refuses NaN, infinities, negative and absurd values.
"""

from __future__ import annotations

import math

from streamx.sizes import bytes_to_int, number_abbrev_to_int

__all__ = [
    "MAX_BYTES",
    "MAX_COUNT",
    "check_finite",
    "fmt_bytes",
    "fmt_rate",
    "fmt_seconds",
    "parse_count",
    "parse_float",
    "parse_int",
    "parse_size",
]

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
# No dataset, cache or link is larger than an exbibyte; no count above 10^15 is meant.
MAX_BYTES = 2**60
MAX_COUNT = 10**15


def fmt_bytes(value: float) -> str:
    """``1536`` -> ``'1.50 KiB'``: binary units chosen so the number is below 1024.

    Examples:
        >>> fmt_bytes(0), fmt_bytes(1023), fmt_bytes(5 * 2**20), fmt_bytes(65603108864)
        ('0 B', '1023 B', '5.00 MiB', '61.10 GiB')
    """
    size, unit = float(value), 0
    while abs(size) >= 1024 and unit < len(_BINARY) - 1:
        size, unit = size / 1024, unit + 1
    return f"{size:.0f} B" if unit == 0 else f"{size:,.2f} {_BINARY[unit]}"


def fmt_rate(value: float) -> str:
    """Bytes per second, e.g. ``'100.00 MiB/s'``."""
    return fmt_bytes(value) + "/s"


def fmt_seconds(value: float) -> str:
    """Seconds with a precision that suits their size (``'0.042 s'``, ``'1,079.7 s'``)."""
    return f"{value:.3g} s" if abs(value) < 10 else f"{value:,.1f} s"


def check_finite(name: str, value: float) -> float:
    """``value``, or a ``ValueError`` naming ``name`` when it is NaN or infinite."""
    if not math.isfinite(value):
        raise ValueError(f"`{name}` must be a finite number, got {value!r}")
    return value


def _text(name: str, value: object) -> str:
    text = str(value).strip()
    if not text:
        raise ValueError(f"`{name}` is empty")
    return text


def parse_float(name: str, value: object, *, positive: bool = False) -> float:
    """A finite, non-negative float (``positive``: above zero), named in every error."""
    text = _text(name, value)
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"`{name}` must be a number, got {text!r}") from None
    check_finite(name, number)
    if number < 0 or (positive and number == 0):
        raise ValueError(f"`{name}` must be {'> 0' if positive else '>= 0'}, got {text!r}")
    return number


def parse_int(name: str, value: object, *, minimum: int = 1) -> int:
    """A whole number of at least ``minimum`` (and at most 10^15), named in every error."""
    text = _text(name, value)
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"`{name}` must be a whole number, got {text!r}") from None
    if not minimum <= number <= MAX_COUNT:
        raise ValueError(f"`{name}` must be between {minimum} and {MAX_COUNT:,}, got {text!r}")
    return number


def parse_size(name: str, value: object, *, minimum: int = 1) -> int:
    """Bytes from ``'64MB'``, ``'64MiB'`` or ``'67108864'`` (binary units), named in errors."""
    text = _text(name, value)
    lowered = text.lower()
    # "MiB" is the unit we print: accept it back as the "MB" it equals.
    if lowered.endswith("ib") and len(lowered) > 2 and lowered[-3].isalpha():
        lowered = lowered[:-2] + "b"
    number = _finite_prefix(name, text, lowered)
    try:
        size = bytes_to_int(lowered)
    except (ValueError, OverflowError):
        raise ValueError(
            f"`{name}` must be a size such as 64MiB, 2GiB or a byte count, got {text!r}"
        ) from None
    if not minimum <= size <= MAX_BYTES or number < 0:
        raise ValueError(f"`{name}` must be between {minimum} B and 1 EiB, got {text!r}")
    return size


def parse_count(name: str, value: object, *, minimum: int = 1) -> int:
    """A sample count such as ``'4m'`` (decimal), named in every error."""
    text = _text(name, value)
    _finite_prefix(name, text, text.lower())
    try:
        count = number_abbrev_to_int(text)
    except (ValueError, OverflowError):
        raise ValueError(f"`{name}` must be a count such as 4m or 100000, got {text!r}") from None
    if not minimum <= count <= MAX_COUNT:
        raise ValueError(f"`{name}` must be between {minimum} and {MAX_COUNT:,}, got {text!r}")
    return count


def _finite_prefix(name: str, text: str, lowered: str) -> float:
    """The number before the unit, refused when NaN or infinite (0.0 when none parses)."""
    head = lowered.rstrip("abcdefghijklmnopqrstuvwxyz") or lowered
    for candidate in (lowered, head):
        try:
            number = float(candidate)
        except ValueError:
            continue
        if not math.isfinite(number):
            raise ValueError(f"`{name}` must be a finite size or count, got {text!r}")
        return number
    return 0.0
