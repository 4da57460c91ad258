"""How far ahead the loader's window reaches, in samples of the reading order.

The loader (:class:`streamx.dataset.read_window.ShardWindow`) fetches the shards of the
chunk it reads and of the ``predownload`` samples after it, plus the next
``shards_ahead`` *other* shards the order reaches after those. In a shuffled order those
shards come within a few samples (the order interleaves many shards), so ``shards_ahead``
adds few samples of reach, not ``shards_ahead`` whole shards; in an unshuffled order it
adds about that many shards. :func:`window_samples` measures that reach on the run's own
first-epoch order, which the link model's release schedule then uses.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx.sim.config import SimConfig
from streamx.sim.schedule import ShardOf

__all__ = ["window_samples"]

# Positions of one process's order sampled to measure the reach (evenly spread), the
# processes whose orders are sampled, and how far on from a position a reach is looked for
# (a shard first read further on than that is released that far ahead: long enough).
_PROBES = 16
_PROCESSES = 4
_SCAN = 1 << 13


def _reach(shards: NDArray[np.int64], start: int, window: int, following: int) -> int:
    """Samples past ``start + window`` until ``following`` shards not in the window have
    appeared, looking at most ``_SCAN`` samples on (the rest of the order, or ``_SCAN``,
    when fewer appear)."""
    held = np.unique(shards[start : start + window])
    later = shards[start + window : start + window + _SCAN]
    found, first = np.unique(later, return_index=True)
    new = np.sort(first[~np.isin(found, held)])
    if len(new) >= following:
        return int(new[following - 1]) + 1
    return len(later)


def window_samples(config: SimConfig, ids: NDArray[np.int64], shard_of: ShardOf) -> int:
    """Samples the loader's window reaches past a reader's position: the ``predownload``
    and, on average over a few of the first node's processes' first-epoch orders, the
    samples until ``shards_ahead`` more shards appear.

    Examples:
        >>> from streamx.sim import SimConfig, SimStream, synth_shards
        >>> from streamx.sim.run import epoch_order
        >>> c = SimConfig((SimStream(synth_shards(4_000, 100, 10**7)),), devices=1,
        ...               workers=1, batch_size=10, predownload=50, shards_ahead=2)
        >>> window_samples(c, epoch_order(c, 0), c.shards.shard_of())  # to the 2nd shard start
        192
    """
    window = config.predownload if config.predownload is not None else 8 * config.batch_size
    if not config.shards_ahead:
        return window
    node = ids[0].reshape(ids.shape[1] * ids.shape[2], -1)
    reaches = []
    for row in node[:_PROCESSES]:
        row = row[row >= 0]
        if not len(row):
            continue
        shards = shard_of(row)
        for start in np.linspace(0, max(len(row) - 1, 0), _PROBES).astype(np.int64).tolist():
            reaches.append(_reach(shards, start, window, config.shards_ahead))
    return window + (round(float(np.mean(reaches))) if reaches else 0)
