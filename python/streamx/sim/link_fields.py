"""The request model's settings as people write them: one parser per field, shared by the
command line, a training YAML's ``simulator:`` section, ``--compare`` and ``--tune``.

Sizes and rates are binary (``40MB`` is 40 x 2^20 bytes per second, as nginx's ``40m``),
times are seconds, ``throttled`` is a share of requests (``0.1``, or ``10%``),
``request_rate`` requests per second (``40``, or nginx's ``40r/s``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from streamx.sim.units import parse_float, parse_int, parse_size

__all__ = ["LINK_FIELDS", "parse_link", "parse_rate", "parse_share"]


def parse_share(name: str, value: object) -> float:
    """A share in ``[0, 1)``: ``0.1`` or ``10%``, named in every error.

    Examples:
        >>> parse_share("throttled", "25%"), parse_share("throttled", 0.5)
        (0.25, 0.5)
    """
    text = str(value).strip()
    share = parse_float(name, text[:-1]) / 100 if text.endswith("%") else parse_float(name, text)
    if share >= 1:
        raise ValueError(f"`{name}` must be a share below 1 (or 100%), got {text!r}")
    return share


def parse_rate(name: str, value: object) -> float:
    """Requests per second above zero: ``40``, or as nginx writes it, ``40r/s`` or
    ``600r/m``; named in every error.

    Examples:
        >>> parse_rate("request_rate", "40r/s"), parse_rate("request_rate", "120r/m")
        (40.0, 2.0)
    """
    text = str(value).strip()
    per = 1.0
    for unit, seconds in (("r/s", 1.0), ("r/m", 60.0)):
        if text.endswith(unit):
            text, per = text[: -len(unit)], seconds
    return parse_float(name, text, positive=True) / per


# Field -> parser of one value as written (each names its field in errors).
LINK_FIELDS: dict[str, Callable[[object], Any]] = {
    "connections": lambda v: parse_int("connections", v),
    "part_size": lambda v: parse_size("part_size", v),
    "connection_bandwidth": lambda v: float(parse_size("connection_bandwidth", v)),
    "rtt": lambda v: parse_float("rtt", v),
    "tls_handshake": lambda v: parse_float("tls_handshake", v),
    "throttled": lambda v: parse_share("throttled", v),
    "retry_after": lambda v: parse_float("retry_after", v),
    "request_rate": lambda v: parse_rate("request_rate", v),
    "request_burst": lambda v: parse_int("request_burst", v, minimum=0),
    "decompression": lambda v: float(parse_size("decompression", v)),
    "price_per_1000": lambda v: parse_float("price_per_1000", v),
    "shards_ahead": lambda v: parse_int("shards_ahead", v, minimum=0),
}


def parse_link(values: Mapping[str, object], where: str) -> dict[str, Any]:
    """The request model's fields of ``values`` (a YAML section, flags), parsed.

    Raises:
        ValueError: A key that is not a field, or a value its field refuses, named with
            ``where``.

    Examples:
        >>> parse_link({"connection_bandwidth": "40MB", "rtt": 0.01}, "run.yaml: simulator")
        {'connection_bandwidth': 41943040.0, 'rtt': 0.01}
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = str(key).replace("-", "_")
        if name not in LINK_FIELDS:
            raise ValueError(f"{where}: unknown key {key!r}; the fields are {sorted(LINK_FIELDS)}")
        if value is None:
            continue
        try:
            out[name] = LINK_FIELDS[name](value)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
    return out
