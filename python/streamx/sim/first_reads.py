"""What a pass's first chunks cost in requests: the range reads of their shards, and which
downloads are needed now rather than fetched ahead.

A process starting a pass (:mod:`streamx.cache.range_reads`, :mod:`streamx.cache.shard_cache`)
reads by range, from every shard that can be read so, the samples of its first fetch: the
chunks its first batch spans (the dataset declares them, ``RangeReads.expect``).
That is one GET of the shard's offset table, then the samples' bytes spread over about four
GETs of at least 256 KiB (one at least per span of samples). It starts each such shard's
download after its ranges; the process's later reads of the shard copy the parts that
download lands rather than GET them (what they still read by range, where a part lands
late, depends on timing: not modelled). The look-ahead starts at the next chunk: the shards
of the first two chunks are downloads a reader waits for, split over the connections
(:mod:`streamx.storage.part_plan`); every later one is fetched ahead.

:func:`reads_by_range` is the rule for which shards are read by range: a small function, so
the loader's rule (its range reads may become rarer) is one place to follow here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from streamx.sim.config import SimConfig
from streamx.sim.schedule import ShardOf
from streamx.storage.settings import range_reads_enabled

__all__ = ["first_now_files", "range_read_gets", "reads_by_range"]

# streamx.cache.range_reads / range_partial: the smallest shard read by range, the most
# bytes one shard's ranges bring, the smallest piece one GET asks for and the GETs a fetch
# spreads over, the gap below which samples are one span.
MIN_SHARD_BYTES = 4 << 20
_BUDGET = 8 << 20
_PIECE = 256 << 10
_PARALLEL = 4
_MERGE_GAP = 64 << 10
# Chunks of a pass whose shards are downloads a reader waits for (the look-ahead starts at
# the second chunk's window, after the first chunk's reads).
_NOW_CHUNKS = 2


def reads_by_range(config: SimConfig) -> NDArray[np.bool_]:
    """Per shard, whether a pass's first chunk reads it by range: an uncompressed shard of at
    least 4 MiB, on a calm host (no ``request_rate``: a throttling store's first refusal
    makes range reads give way, which :mod:`~streamx.sim.request_cap` plays), without a
    ``cache_limit`` (its window starts the downloads itself), unless range reads are off
    (``STREAMX_RANGE_READS=0``, read here as the loader reads it)."""
    shards = config.shards
    calm = config.request_rate is None and not config.limited and range_reads_enabled()
    ok: NDArray[np.bool_] = (shards.zip_bytes == 0) & (shards.raw_bytes >= MIN_SHARD_BYTES)
    return ok & calm


def _first_chunks(ids: NDArray[np.int64], chunk: int, count: int) -> list[NDArray[np.int64]]:
    """Each process's first ``count`` chunks of one node's ids (devices, workers, ...)."""
    rows = ids.reshape(ids.shape[0] * ids.shape[1], -1)
    return [row[row >= 0][: chunk * count] for row in rows]


def range_read_gets(
    config: SimConfig, ids: NDArray[np.int64], shard_of: ShardOf, chunk: int
) -> tuple[int, int]:
    """(offset tables, sample pieces): the GETs the first epoch's range reads send, all
    nodes. Per process and shard its first fetch reads by range: the chunks its first batch
    spans (``ceil(batch_size / chunk)`` chunks of ids), in the order it reads them up
    to the shard's budget (a quarter of it, at most 8 MiB); one GET for the offset table,
    and the bytes (samples less than 64 KiB apart in one span) in about 4 even pieces of
    at least 256 KiB, at least one per span.

    Examples:
        >>> from streamx.sim import SimConfig, SimStream, synth_shards
        >>> from streamx.sim.run import epoch_order
        >>> c = SimConfig((SimStream(synth_shards(400, 100, 40_000_000)),), devices=1,
        ...               workers=1, batch_size=8)
        >>> ids = epoch_order(c, 0)  # unshuffled: 10 samples of 400 KB, one span of 4 MB
        >>> range_read_gets(c, ids, c.shards.shard_of(), 10)  # the table, 4 pieces of 1 MB
        (1, 4)
    """
    by_range = reads_by_range(config)
    if not by_range.any():
        return 0, 0
    count = -(-config.batch_size // chunk) * chunk  # the chunks the first batch spans
    process, shard, local = _first_fetches(config, ids, shard_of, count)
    if not len(local):
        return 0, 0
    size = config.shards.raw_bytes[shard] / np.maximum(config.shards.samples[shard], 1)
    group = np.ones(len(local), bool)  # a new (process, shard): a new offset table
    group[1:] = (process[1:] != process[:-1]) | (shard[1:] != shard[:-1])
    span = group.copy()  # a new span: a new group, or 64 KiB or more past the last sample
    span[1:] |= (local[1:] - local[:-1] - 1) * size[1:] >= _MERGE_GAP
    span_bytes = np.bincount(np.cumsum(span) - 1) * size[span]  # one shard: one sample size
    span_group = np.cumsum(group)[span] - 1
    piece = np.maximum(_PIECE, np.ceil(np.bincount(span_group, span_bytes) / _PARALLEL))
    pieces = np.ceil(span_bytes / piece[span_group])
    return int(group.sum()), int(pieces.sum())


def _first_fetches(
    config: SimConfig, ids: NDArray[np.int64], shard_of: ShardOf, count: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """(process, shard, sample in the shard) of what each process's first ``count`` ids
    read by range, within each shard's budget, sorted by process, shard and sample."""
    shards = config.shards
    firsts = [c for node in ids for c in _first_chunks(node, count, 1)]
    process = np.repeat(np.arange(len(firsts)), [len(c) for c in firsts])
    sample = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
    shard = shard_of(sample)
    kept = reads_by_range(config)[shard]
    process, shard, sample = process[kept], shard[kept], sample[kept]
    local = sample - np.concatenate([[0], np.cumsum(shards.samples)[:-1]])[shard]
    # In read order per (process, shard), the samples whose bytes fit the budget.
    order = np.lexsort((np.arange(len(local)), shard, process))
    process, shard, local = process[order], shard[order], local[order]
    size = shards.raw_bytes[shard] / np.maximum(shards.samples[shard], 1)
    group = np.ones(len(local), bool)
    group[1:] = (process[1:] != process[:-1]) | (shard[1:] != shard[:-1])
    total = np.cumsum(size)
    taken = total - (total - size)[group][np.cumsum(group) - 1]
    fits = taken <= np.minimum(_BUDGET, shards.raw_bytes[shard] / 4)
    process, shard, local = process[fits], shard[fits], local[fits]
    order = np.lexsort((local, shard, process))
    process, shard, local = process[order], shard[order], local[order]
    fresh = np.ones(len(local), bool)  # a sample read twice in one fetch is one read
    fresh[1:] = (
        (process[1:] != process[:-1]) | (shard[1:] != shard[:-1]) | (local[1:] != local[:-1])
    )
    return process[fresh], shard[fresh], local[fresh]


def first_now_files(ids: NDArray[np.int64], shard_of: ShardOf, chunk: int) -> list[int]:
    """Per node, the downloads its processes' first two chunks need now (distinct shards of
    each process's first two chunks, summed): the first ones of its list."""
    out = []
    for node in ids:
        now = sum(len(np.unique(shard_of(c))) for c in _first_chunks(node, chunk, _NOW_CHUNKS))
        out.append(int(now))
    return out
