"""Turn command-line / UI parameters into :class:`SimConfig` values (one or many to compare)."""

from __future__ import annotations

import itertools
from dataclasses import fields
from typing import Any

from streamx.sim.config import SimConfig, SimStream
from streamx.sim.shards import load_shards, synth_shards
from streamx.sizes import bytes_to_int, number_abbrev_to_int

__all__ = ["COMPARABLE", "expand_compare", "parse_compare", "streams_from"]

# Fields a comparison may vary, with the parser of one value.
COMPARABLE: dict[str, Any] = {
    "shuffle_algo": str,
    "partition_algo": str,
    "predownload": int,
    "cache_limit": bytes_to_int,
    "nodes": int,
    "devices": int,
    "workers": int,
    "batch_size": int,
    "num_canonical_nodes": int,
    "shuffle_block_size": int,
    "bandwidth": lambda v: float(bytes_to_int(v)),
    "time_per_sample": float,
    "shuffle": lambda v: str(v).lower() in ("1", "true", "yes", "on"),
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
        out[key] = [COMPARABLE[key](v.strip()) for v in values.split(",")]
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
    shard_samples: int,
    shard_bytes: str,
) -> tuple[SimStream, ...]:
    """One stream from a real index, or synthesised from a sample count and shard size.

    Raises:
        ValueError: If neither an index nor a sample count is given.
    """
    if index:
        return (SimStream(load_shards(index, split)),)
    if samples:
        return (
            SimStream(
                synth_shards(
                    number_abbrev_to_int(samples), shard_samples, bytes_to_int(shard_bytes)
                )
            ),
        )
    raise ValueError("Give a training YAML, --index PATH|URL, or --samples N to synthesise shards")
