"""The py1e count cache's lock: processes that start the same epoch together (DataLoader
workers, the ranks of a node) count its draws once; the others wait, then read the file. Each
process reports what it did with the cache (``count_cache_stats``: nodes read, nodes
written), so the test counts the writers rather than timing anything."""

from __future__ import annotations

import os
from pathlib import Path

from count_cache_helpers import race
from plan_configs import plan_config

# 10^8 samples in one canonical node: a count long enough for the three to overlap.
SIZES = [250_000] * 400


def test_workers_starting_an_epoch_together_count_it_once(tmp_path: Path) -> None:
    config = plan_config(SIZES, num_canonical_nodes=1, world=(1, 1, 3), shuffle_block_size=1 << 18)
    cache = tmp_path / "counts"
    cache.mkdir(mode=0o700)
    results = race(config, cache, 3)
    stats = sorted(tuple(r["stats"]) for r in results)
    # One wrote the node; the two others read it and wrote nothing.
    assert stats == [(0, 1, None), (1, 0, None), (1, 0, None)], stats
    assert len({tuple(r["first"]) for r in results}) == 3  # three workers' own shares
    (name,) = os.listdir(cache)  # the draws; no lock file is left
    assert name.startswith("py1e-draws-") and name.endswith(".bin"), name
