"""The epoch-plan configuration the order tests start from (``_core`` plan dicts)."""

from __future__ import annotations

from typing import Any

from streamx.order.settings import PlanConfig


def plan_config(sizes: list[int], **changes: Any) -> PlanConfig:
    """One stream of shards of ``sizes`` samples, py1e, 4 canonical nodes, 2 x 2 x 2 world,
    with ``changes`` applied."""
    config: dict[str, Any] = {
        "streams": [(sizes, sum(sizes), 1.0)],
        "seed": 9,
        "epoch": 1,
        "shuffle": True,
        "shuffle_algo": "py1e",
        "shuffle_block_size": 500,
        "num_canonical_nodes": 4,
        "partition_algo": "relaxed",
        "batching_method": "random",
        "batch_size": 4,
        "world": (2, 2, 2),
        "sample_in_epoch": 0,
        "initial_physical_nodes": None,
        "sampling_method": "balanced",
        "sampling_granularity": 1,
    }
    config.update(changes)
    return config  # type: ignore[return-value]
