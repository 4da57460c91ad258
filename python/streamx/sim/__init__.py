"""The Streaming Simulator: predict a run's step times, downloads and cache needs.

The sample order comes from the same Rust planner ``StreamingDataset`` uses, so the
simulated run reads exactly the shards training will read, in the same order.

Examples:
    >>> from streamx.sim import SimConfig, SimStream, simulate, synth_shards
    >>> cfg = SimConfig((SimStream(synth_shards(20_000, 500, 10_000_000)),), devices=2,
    ...                 workers=2, batch_size=8, time_per_sample=0.01, bandwidth=50e6)
    >>> simulate(cfg).summary()["steps"]
    1250
"""

from streamx.sim.config import SimConfig, SimStream
from streamx.sim.result import SimResult, Summary
from streamx.sim.run import epoch_order, simulate
from streamx.sim.shard_table import ShardTable, load_shards, synth_shards

__all__ = [
    "ShardTable",
    "SimConfig",
    "SimResult",
    "SimStream",
    "Summary",
    "epoch_order",
    "load_shards",
    "simulate",
    "synth_shards",
]
