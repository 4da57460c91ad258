"""Run mosaicml-streaming's own simulator (the ``simulation`` package) on a given index."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from streamx.sim import SimConfig


def write_index(
    root: Path, samples: list[int], raw: list[int], zipped: list[int] | None = None
) -> None:
    """An MDS ``index.json`` for shards of the given sizes (the simulators read only this)."""
    shards = []
    for i, (count, size) in enumerate(zip(samples, raw)):
        zip_size = zipped[i] if zipped else None
        shards.append(
            {
                "column_encodings": ["bytes"],
                "column_names": ["x"],
                "column_sizes": [None],
                "compression": "zstd" if zip_size else None,
                "format": "mds",
                "hashes": [],
                "raw_data": {"basename": f"shard.{i:05}.mds", "bytes": size, "hashes": {}},
                "samples": count,
                "size_limit": 1 << 26,
                "version": 2,
                "zip_data": {"basename": f"shard.{i:05}.mds.zstd", "bytes": zip_size, "hashes": {}}
                if zip_size
                else None,
            }
        )
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.json").write_text(json.dumps({"version": 2, "shards": shards}))


def mosaic_simulate(
    local: Path, config: SimConfig
) -> tuple[NDArray[np.float64], NDArray[np.int64], int]:
    """(step times, step bytes, min cache limit) from mosaic's simulator for ``config``."""
    from simulation.core.main import simulate
    from simulation.core.sim_dataset import SimulationDataset
    from simulation.core.sim_time import Time, TimeUnit

    log = logging.getLogger("simulation")
    if log.level == logging.NOTSET:  # quiet, unless the caller asked (bench progress)
        log.setLevel(logging.WARNING)
    dataset = SimulationDataset(
        config.nodes,
        config.devices,
        config.workers,
        local=str(local),
        predownload=config.predownload,
        cache_limit=config.cache_limit,
        partition_algo=config.partition_algo,
        num_canonical_nodes=config.num_canonical_nodes,
        batch_size=config.batch_size,
        shuffle=config.shuffle,
        shuffle_algo=config.shuffle_algo,
        shuffle_seed=config.shuffle_seed,
        shuffle_block_size=config.shuffle_block_size,
    )
    duration = (
        Time(config.max_batches, TimeUnit.BATCH)
        if config.max_batches
        else Time(config.epochs, TimeUnit.EPOCH)
    )
    times, downloads, _, cache = next(
        simulate(dataset, config.time_per_sample, int(config.bandwidth), duration)
    )
    return np.asarray(times, np.float64), np.asarray(downloads, np.int64), int(cache)
