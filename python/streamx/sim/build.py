"""Turn command-line / UI parameters into :class:`SimConfig` values (one or many to compare)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import fields
from typing import Any, get_args

from streamx.order.settings import PartitionAlgo, ShuffleAlgo
from streamx.sim.config import SimConfig, SimStream
from streamx.sim.link_fields import LINK_FIELDS
from streamx.sim.shard_table import load_shards, synth_shards
from streamx.sim.units import parse_count, parse_float, parse_int, parse_size

__all__ = ["COMPARABLE", "expand_compare", "parse_bool", "parse_compare", "streams_from"]


def _choice(name: str, kind: Any) -> Callable[[str], str]:
    """A parser accepting only the values of the Literal ``kind``, naming ``name``."""
    allowed = get_args(kind)

    def parse(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"`{name}` must be one of {list(allowed)}, got {value!r}")
        return value

    return parse


def parse_bool(name: str, value: object) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``), naming ``name``."""
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"`{name}` must be true or false, got {value!r}")


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

# Fields a comparison may vary, with the parser of one value (each names its field).
COMPARABLE: dict[str, Callable[[str], Any]] = {
    "shuffle_algo": _choice("shuffle_algo", ShuffleAlgo),
    "partition_algo": _choice("partition_algo", PartitionAlgo),
    "predownload": lambda v: parse_int("predownload", v, minimum=0),
    "cache_limit": lambda v: parse_size("cache_limit", v, minimum=0),
    "nodes": lambda v: parse_int("nodes", v),
    "devices": lambda v: parse_int("devices", v),
    "workers": lambda v: parse_int("workers", v),
    "batch_size": lambda v: parse_int("batch_size", v),
    "num_canonical_nodes": lambda v: parse_int("num_canonical_nodes", v),
    "shuffle_block_size": lambda v: parse_int("shuffle_block_size", v),
    "bandwidth": lambda v: float(parse_size("bandwidth", v)),
    "time_per_sample": lambda v: parse_float("time_per_sample", v),
    "shuffle": lambda v: parse_bool("shuffle", v),
    **LINK_FIELDS,
}


def parse_compare(items: list[str]) -> dict[str, list[Any]]:
    """``["shuffle_algo=py1e,py1s", "nodes=1,2"]`` -> ``{"shuffle_algo": [...], ...}``.

    Raises:
        ValueError: If an item is malformed or names a field that cannot be compared.
    """
    out: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in COMPARABLE or not values:
            raise ValueError(
                f"--compare {item!r}: expected FIELD=V1,V2 with FIELD one of {sorted(COMPARABLE)}"
            )
        try:
            out[key] = [COMPARABLE[key](v.strip()) for v in values.split(",")]
        except ValueError as err:
            raise ValueError(f"--compare {item!r}: {err}") from None
    return out


def expand_compare(base: SimConfig, compare: dict[str, list[Any]]) -> list[SimConfig]:
    """Every combination of the compared values applied to ``base``, each named by them."""
    if not compare:
        return [base]
    keys = list(compare)
    names = {f.name for f in fields(SimConfig)}
    out = []
    for combo in itertools.product(*(compare[k] for k in keys)):
        changes = dict(zip(keys, combo))
        assert set(changes) <= names
        name = " ".join(f"{k}={v}" for k, v in changes.items())
        out.append(base.with_(**changes, name=name))
    return out


def streams_from(
    index: str | None,
    split: str | None,
    samples: str | None,
    shard_samples: int | str,
    shard_bytes: str,
) -> tuple[SimStream, ...]:
    """One stream from a real index, or synthesised from a sample count and shard size.

    Raises:
        ValueError: If neither an index nor a sample count is given.
    """
    if index:
        return (SimStream(load_shards(index, split)),)
    if samples:
        shard_samples = parse_int("shard_samples", shard_samples)
        return (
            SimStream(
                synth_shards(
                    parse_count("samples", samples),
                    shard_samples,
                    parse_size("shard_bytes", shard_bytes),
                )
            ),
        )
    raise ValueError("Give a training YAML, --index PATH|URL, or --samples N to synthesise shards")
