"""Typed order values: ``EpochSettings.resolve``, ``DatasetLayout`` and the plan config."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import numpy as np
import pytest

import streamx
from streamx.dataset.layout import DatasetLayout
from streamx.order.epoch import plan_config
from streamx.order.settings import EpochSettings, ResumeState
from streamx.order.world import World

BASE = EpochSettings(
    batch_size=4,
    shuffle=True,
    shuffle_algo="py1e",
    shuffle_seed=9176,
    shuffle_block_size=None,
    num_canonical_nodes=None,
    initial_physical_nodes=None,
    partition_algo="relaxed",
    batching_method="random",
    sampling_method="balanced",
    sampling_granularity=1,
)


def test_resolve_fills_defaults_from_the_node_count() -> None:
    resolved = BASE.resolve(None, num_nodes=3)
    assert resolved.num_canonical_nodes == 3
    assert resolved.shuffle_block_size == max(4_000_000 // 3, 1 << 18)
    py1s = replace(BASE, shuffle_algo="py1s").resolve(None, num_nodes=2)
    assert py1s.num_canonical_nodes == 128
    assert BASE.num_canonical_nodes is None  # a new value; the original is untouched


def test_resolve_applies_a_state_and_keeps_the_block_size() -> None:
    first = BASE.resolve(None, num_nodes=1)
    state: ResumeState = {
        "epoch": 2,
        "sample_in_epoch": 8,
        "num_canonical_nodes": 16,
        "shuffle_seed": 3,
        "initial_physical_nodes": 4,
    }
    later = first.resolve(state, num_nodes=1)
    assert (later.num_canonical_nodes, later.shuffle_seed, later.initial_physical_nodes) == (
        16,
        3,
        4,
    )
    # Derived once, from the first canonical node count, as upstream does.
    assert later.shuffle_block_size == first.shuffle_block_size
    # A state dict of an old version has no initial_physical_nodes.
    old: ResumeState = {
        "epoch": 0,
        "sample_in_epoch": 0,
        "num_canonical_nodes": 2,
        "shuffle_seed": 1,
    }
    assert first.resolve(old, num_nodes=1).initial_physical_nodes is None


def test_plan_config_needs_resolved_settings_and_a_batch_size() -> None:
    world = World(1, 1, 0)
    with pytest.raises(RuntimeError, match="resolved"):
        plan_config([([5], 5, 1.0)], BASE, 0, 0, world)
    with pytest.raises(ValueError, match="batch_size"):
        plan_config([([5], 5, 1.0)], replace(BASE, batch_size=None), 0, 0, world)
    config = plan_config([([5], 5, 1.0)], BASE.resolve(None, 1), 0, 0, world)
    assert config["num_canonical_nodes"] == 1
    assert config["world"] == (1, 1, 1)


def test_settings_are_frozen() -> None:
    with pytest.raises(FrozenInstanceError):
        BASE.shuffle_seed = 1  # type: ignore[misc]


def test_layout_is_read_only(tmp_path: Path) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"id": "int"}, size_limit=100) as writer:
        for i in range(30):
            writer.write({"id": i})
    ds = streamx.StreamingDataset(local=str(tmp_path), batch_size=2)
    layout = DatasetLayout.load(ds.streams, World(1, 1, 0), False)
    assert layout.num_samples == 30 == ds.num_samples
    np.testing.assert_array_equal(layout.samples_per_shard, ds.samples_per_shard)
    with pytest.raises(ValueError, match="read-only"):
        ds.samples_per_shard[0] = 1
    with pytest.raises(AttributeError, match="fixed"):
        ds.num_samples = 3
    # Shards holding no sample own no id.
    expected = np.repeat(np.arange(layout.num_shards), layout.samples_per_shard)
    np.testing.assert_array_equal(layout.shards_of(np.arange(30, dtype=np.int64)), expected)
