"""``get_sampling`` and ``resample_streams`` parity with mosaicml-streaming 0.13.0: per-shard
sample choices for every granularity, and each stream weighting's epoch size, choices and
resampled ids."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from order_helpers import (
    OrderSpec,
    assert_same_outcome,
    capture,
    mosaic_dataset,
    streamx_config,
    streamx_streams,
)

from streamx import _core

streaming = pytest.importorskip("streaming")
from streaming.base.sampling import get_sampling as mosaic_sampling  # noqa: E402

pytestmark = pytest.mark.compat

SAMPLING_SHARDS = [
    [4, 4, 4],
    [5, 0, 3],
    [0, 5, 3],
    [10, 0, 0, 9],
    [1, 0, 1, 0, 7],
    [7],
    [3, 11, 2, 30],
]


@pytest.mark.parametrize("sizes", SAMPLING_SHARDS, ids=str)
def test_get_sampling(sizes: list[int]) -> None:
    total = sum(sizes)
    for granularity in (1, 2, 3, 7):
        for choose in sorted({0, 1, total // 2, total - 1, total, total + 1, 2 * total + 3, 5}):
            for seed, epoch, use_epoch in (
                (0, 0, True),
                (42, 3, True),
                (42, 3, False),
                (2**40, 1, True),
            ):
                args = (sizes, choose, granularity, seed, epoch, use_epoch)
                theirs = capture(
                    functools.partial(mosaic_sampling, np.array(args[0], np.int64), *args[1:])
                )
                ours = capture(functools.partial(_core.get_sampling, *args))
                assert_same_outcome(theirs, ours, f"get_sampling{args}")


def test_get_sampling_spec_vectors() -> None:
    assert _core.get_sampling([4, 4, 4], 5, 1, 42, 0, True).tolist() == [1, 2, 2]
    assert _core.get_sampling([4, 4, 4], 30, 2, 42, 0, True).tolist() == [8, 12, 10]


def test_get_sampling_rejects_bad_arguments() -> None:
    for args in (([4, 4], -1, 1, 0, 0, True), ([4, 4], 3, 0, 0, 0, True)):
        theirs = capture(functools.partial(mosaic_sampling, np.array(args[0]), *args[1:]))
        ours = capture(functools.partial(_core.get_sampling, *args))
        assert theirs.error is ValueError
        assert_same_outcome(theirs, ours, str(args))


RESAMPLE_SPECS = {
    "natural": OrderSpec(shards=((5, 7, 3), (11, 2))),
    "repeat": OrderSpec(shards=((5, 7, 3), (11, 2)), weights=(("repeat", 2.5), ("repeat", 0.3))),
    "choose": OrderSpec(shards=((5, 0, 7, 3), (11, 2)), weights=(("choose", 40), ("choose", 6))),
    "proportion": OrderSpec(
        shards=((5, 7, 3), (11, 2), (8,)),
        weights=(("proportion", 1), ("proportion", 2), ("proportion", 0.5)),
        epoch_size=101,
    ),
    "epoch_size": OrderSpec(shards=((5, 7, 3), (11, 2)), epoch_size=17),
    "granular": OrderSpec(
        shards=((50, 70, 33),), weights=(("repeat", 1.7),), sampling_granularity=8
    ),
    "fixed": OrderSpec(shards=((50, 70, 33),), weights=(("repeat", 0.6),), sampling_method="fixed"),
}


@pytest.mark.parametrize("name", sorted(RESAMPLE_SPECS))
@pytest.mark.parametrize("shuffle", [False, True])
def test_resample_streams(name: str, shuffle: bool) -> None:
    spec = RESAMPLE_SPECS[name].with_(shuffle=shuffle)
    theirs_ds = mosaic_dataset(spec)
    ours_streams, ours_epoch_size = streamx_streams(spec)
    assert ours_epoch_size == theirs_ds.epoch_size
    for s_ours, s_theirs in zip(ours_streams, theirs_ds.streams):
        assert int(s_ours.choose) == int(s_theirs.choose)
        assert float(s_ours.proportion) == float(s_theirs.proportion)
        assert float(s_ours.repeat) == float(s_theirs.repeat)
    for epoch in range(4):
        config = streamx_config(spec, (1, 1, 1), epoch, 0)
        for stream_id in (None, *range(len(spec.shards))):
            units, ids = _core.resample_streams(config, stream_id)
            with warnings.catch_warnings():
                # Upstream divides by an empty shard's size (numpy warns, the result is 0).
                warnings.simplefilter("ignore", RuntimeWarning)
                want_units, want_ids = theirs_ds.resample_streams(epoch, stream_id)
            np.testing.assert_array_equal(units, want_units)
            np.testing.assert_array_equal(ids, want_ids)
