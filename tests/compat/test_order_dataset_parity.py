"""End-to-end order parity: ``streamx.StreamingDataset`` vs mosaicml-streaming 0.13.0.

Both libraries read the same MDS directories (written once per module by ``streamx.MDSWriter``,
with uneven shards) in a single process, and must yield the same sample ids in the same order
for every epoch of the same instance, after ``load_state_dict`` resumption, and for every
shuffle algorithm, stream weighting, sampling option and batching method. Lengths, sizes,
derived stream weights and ``state_dict()`` must agree too.

mosaicml-streaming datasets each hold on to descriptors and shared memory for the life of the
process, so the number built here is kept small and leftovers are cleaned per module.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx

streaming = pytest.importorskip("streaming")
from streaming.base.util import clean_stale_shared_memory  # noqa: E402

pytestmark = pytest.mark.compat

# name -> (first id, number of samples, shard size limit in bytes)
DATASETS = {"one": (0, 1, 1 << 20), "small": (0, 157, 300), "big": (0, 10_000, 6_000)}
STREAMS = {"s0": (100_000, 420, 500), "s1": (200_000, 170, 700), "s2": (300_000, 55, 200)}


def _write(out: Path, first: int, count: int, size_limit: int) -> None:
    # The padding column varies in length so that shards hold uneven sample counts.
    pad = np.random.default_rng(count).integers(0, 40, count)
    with streamx.MDSWriter(
        out=str(out), columns={"id": "int", "pad": "bytes"}, size_limit=size_limit
    ) as writer:
        for i in range(count):
            writer.write({"id": first + i, "pad": b"x" * int(pad[i])})


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    root = tmp_path_factory.mktemp("order-data")
    out = {}
    for name, (first, count, limit) in {**DATASETS, **STREAMS}.items():
        _write(root / name, first, count, limit)
        out[name] = str(root / name)
    shard_sizes = [
        s["samples"] for s in json.loads((root / "small" / "index.json").read_text())["shards"]
    ]
    assert len(set(shard_sizes)) > 2, f"shards are expected to be uneven: {shard_sizes}"
    clean_stale_shared_memory()
    yield out
    clean_stale_shared_memory()


class Pair:
    """The same arguments given to both libraries' ``StreamingDataset``."""

    def __init__(
        self, dirs: dict[str, str], data: str | list[tuple[str, dict[str, Any]]], **kwargs: Any
    ) -> None:
        kwargs.setdefault("batch_size", 4)
        self.theirs = self._build(streaming, dirs, data, kwargs)
        self.ours = self._build(streamx, dirs, data, kwargs)

    @staticmethod
    def _build(lib: Any, dirs: dict[str, str], data: Any, kwargs: dict[str, Any]) -> Any:
        if isinstance(data, str):
            return lib.StreamingDataset(local=dirs[data], **kwargs)
        streams = [lib.Stream(local=dirs[name], **weight) for name, weight in data]
        return lib.StreamingDataset(streams=streams, **kwargs)

    def epoch(self) -> list[int]:
        """Iterates both once; asserts equal ids and warnings, and returns the ids."""
        theirs, their_warnings = _iterate(self.theirs)
        ours, our_warnings = _iterate(self.ours)
        assert ours == theirs
        assert our_warnings == their_warnings
        assert isinstance(ours, list), f"both raised {ours}"
        return ours

    def epoch_raises(self) -> None:
        """Iterates both once; both must raise ``ValueError`` (e.g. resuming past the end)."""
        theirs, _ = _iterate(self.theirs)
        ours, _ = _iterate(self.ours)
        assert theirs is ValueError
        assert ours is ValueError

    def check_attributes(self) -> None:
        t, o = self.theirs, self.ours
        assert (len(o), o.size, o.epoch_size, o.num_samples) == (
            len(t),
            t.size,
            t.epoch_size,
            t.num_samples,
        )
        np.testing.assert_array_equal(o.samples_per_shard, t.samples_per_shard)
        for ours, theirs in zip(o.streams, t.streams):
            assert int(ours.choose) == int(theirs.choose)
            assert float(ours.proportion) == float(theirs.proportion)
            assert float(ours.repeat) == float(theirs.repeat)

    def check_state(self, num_samples: int) -> None:
        for from_beginning in (False, True):
            ours = self.ours.state_dict(num_samples=num_samples, from_beginning=from_beginning)
            theirs = self.theirs.state_dict(num_samples=num_samples, from_beginning=from_beginning)
            assert ours == theirs
            assert all(type(v) is int for v in ours.values()), ours

    def load(self, state: dict[str, Any]) -> None:
        self.theirs.load_state_dict(state)
        self.ours.load_state_dict(state)


def _iterate(ds: Any) -> tuple[list[int] | type[BaseException], list[str]]:
    """The epoch's ids (or the exception type iterating raised) and its user warnings."""
    ids: list[int] | type[BaseException]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ids = [int(sample["id"]) for sample in ds]
        except ValueError as err:
            ids = type(err)
    messages = [" ".join(str(w.message).split()) for w in caught if w.category is UserWarning]
    return ids, messages


SINGLE = [
    ("one", {"shuffle": False}),
    ("one", {"shuffle": True, "shuffle_algo": "py1s"}),
    ("small", {"shuffle": False, "batch_size": 7}),
    ("small", {"shuffle": True}),
    (
        "small",
        {"shuffle": True, "shuffle_algo": "py1br", "shuffle_block_size": 30, "shuffle_seed": 1},
    ),
    ("small", {"shuffle": True, "shuffle_algo": "py1s", "num_canonical_nodes": 3}),
    (
        "small",
        {"shuffle": True, "shuffle_algo": "py2s", "shuffle_seed": 2**40, "num_canonical_nodes": 4},
    ),
    ("small", {"shuffle": True, "shuffle_algo": "naive", "shuffle_seed": 0}),
    ("small", {"shuffle": True, "shuffle_algo": "py1e", "shuffle_block_size": 8}),  # warns
    (
        "small",
        {"shuffle": True, "partition_algo": "orig", "num_canonical_nodes": 5, "batch_size": 3},
    ),
    ("big", {"shuffle": True, "shuffle_block_size": 1000, "num_canonical_nodes": 2}),
    pytest.param("big", {"shuffle": True, "shuffle_algo": "py1s"}, marks=pytest.mark.slow),
    pytest.param(
        "big",
        {"shuffle": False, "num_canonical_nodes": 8, "batch_size": 32},
        marks=pytest.mark.slow,
    ),
]


@pytest.mark.parametrize(("data", "kwargs"), SINGLE, ids=lambda v: str(v))
def test_single_stream_epochs(dirs: dict[str, str], data: str, kwargs: dict[str, Any]) -> None:
    pair = Pair(dirs, data, **kwargs)
    pair.check_attributes()
    pair.check_state(0)
    # mosaicml-streaming takes seconds per epoch of the 10k dataset; two epochs show the change.
    epochs = [pair.epoch() for _ in range(2 if data == "big" else 4)]
    pair.check_state(11)
    total = DATASETS[data][1]
    ncn = pair.ours.num_canonical_nodes
    for ids in epochs:
        # With fewer samples than canonical nodes the partition repeats samples.
        assert sorted(set(ids)) == list(range(total))
        # Canonical nodes that do not divide the epoch pad it with repeated samples.
        assert len(ids) == len(pair.ours) or total % ncn
    if kwargs.get("shuffle") and total > 100:
        assert len({tuple(ids) for ids in epochs}) == len(epochs), "epochs are expected to differ"


MIXES = [
    ([("s0", {}), ("s1", {}), ("s2", {})], {"shuffle": True}),
    (
        [("s0", {"proportion": 0.6}), ("s1", {"proportion": 0.3}), ("s2", {"proportion": 0.1})],
        {"shuffle": True, "epoch_size": "1k", "shuffle_block_size": 64},
    ),
    ([("s0", {"proportion": 1}), ("s1", {"proportion": 2})], {"shuffle": False, "epoch_size": 333}),
    (
        [("s0", {"repeat": 0.5}), ("s1", {"repeat": 2.25}), ("s2", {"repeat": 1})],
        {"shuffle": True, "shuffle_algo": "py1s", "sampling_granularity": 4},
    ),
    (
        [("s0", {"choose": 100}), ("s2", {"choose": 130})],
        {
            "shuffle": True,
            "sampling_method": "fixed",
            "shuffle_algo": "py1br",
            "shuffle_block_size": 50,
        },
    ),
    (
        [("s1", {"repeat": 0.7}), ("s2", {"repeat": 1.3})],
        {"shuffle": False, "sampling_method": "balanced", "sampling_granularity": 3},
    ),
    (
        [("s0", {}), ("s2", {})],
        {"shuffle": True, "epoch_size": 200, "shuffle_algo": "py2s", "num_canonical_nodes": 2},
    ),
]


@pytest.mark.parametrize(("streams", "kwargs"), MIXES, ids=lambda v: str(v))
def test_stream_mixing(dirs: dict[str, str], streams: list[Any], kwargs: dict[str, Any]) -> None:
    pair = Pair(dirs, streams, **kwargs)
    pair.check_attributes()
    seen = [pair.epoch() for _ in range(3)]
    assert all(len(ids) >= pair.ours.epoch_size for ids in seen)
    pair.check_state(7)


BATCHED_STREAMS = [
    ("s0", {"proportion": 0.5}),
    ("s1", {"proportion": 0.3}),
    ("s2", {"proportion": 0.2}),
]


@pytest.mark.parametrize("method", ["random", "stratified", "per_stream", "device_per_stream"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_batching_methods(dirs: dict[str, str], method: str, shuffle: bool) -> None:
    pair = Pair(
        dirs,
        BATCHED_STREAMS,
        batching_method=method,
        shuffle=shuffle,
        epoch_size=600,
        batch_size=5,
        shuffle_block_size=200,
        num_canonical_nodes=2,
    )
    epochs = [pair.epoch() for _ in range(3)]
    assert all(epochs), "every epoch is expected to yield samples"


RESUMES = [
    ("small", {"shuffle": True}, [(0, 0), (1, 40), (3, 156)]),
    (
        "small",
        {"shuffle": True, "shuffle_algo": "py1s", "num_canonical_nodes": 4},
        [(0, 12), (2, 100)],
    ),
    ("small", {"shuffle": False}, [(1, 1), (2, 157), (3, 158)]),
    (
        "big",
        {"shuffle": True, "shuffle_algo": "py1br", "shuffle_block_size": 500},
        [(0, 8765), (2, 9999)],
    ),
    (
        [("s0", {"proportion": 0.7}), ("s2", {"proportion": 0.3})],
        {"shuffle": True, "epoch_size": 400, "batching_method": "per_stream"},
        [(0, 40), (1, 41), (2, 200)],
    ),
    (
        [("s0", {"repeat": 1.5}), ("s1", {})],
        {"shuffle": True, "batching_method": "stratified", "batch_size": 6},
        [(0, 48), (3, 60)],
    ),
]


@pytest.mark.parametrize(("data", "kwargs", "points"), RESUMES, ids=lambda v: str(v))
def test_resume(
    dirs: dict[str, str], data: Any, kwargs: dict[str, Any], points: list[tuple[int, int]]
) -> None:
    pair = Pair(dirs, data, **kwargs)
    for epoch, offset in points:
        # The checkpoint carries a canonical node count; it overrides the argument.
        ncn = pair.ours.num_canonical_nodes or 1
        state = {
            "epoch": epoch,
            "sample_in_epoch": offset,
            "num_canonical_nodes": ncn,
            "shuffle_seed": 9176,
            "initial_physical_nodes": 1,
        }
        pair.load(state)
        pair.check_state(3)
        pair.epoch()
        pair.check_state(3)
    if data != "big":  # (a whole epoch of it takes mosaicml-streaming seconds)
        pair.epoch()  # the epoch after the last resumed one starts from its beginning


def test_resume_remainder_is_suffix_of_full_epoch(dirs: dict[str, str]) -> None:
    """Resuming mid-epoch yields exactly the rest of that epoch's uninterrupted order."""
    pair = Pair(dirs, "small", shuffle=True, shuffle_algo="py1e", batch_size=4)
    full = [pair.epoch() for _ in range(2)]
    pair.load({"epoch": 2, "sample_in_epoch": 0, "num_canonical_nodes": 1, "shuffle_seed": 9176})
    third = pair.epoch()
    pair.load({"epoch": 3, "sample_in_epoch": 0, "num_canonical_nodes": 1, "shuffle_seed": 9176})
    fourth = pair.epoch()
    pair.load({"epoch": 4, "sample_in_epoch": 0, "num_canonical_nodes": 1, "shuffle_seed": 9176})
    fifth = pair.epoch()
    assert len({tuple(full[0]), tuple(full[1]), tuple(third), tuple(fourth), tuple(fifth)}) == 5
    ours = streamx.StreamingDataset(local=dirs["small"], shuffle=True, batch_size=4)
    ours.load_state_dict(
        {"epoch": 3, "sample_in_epoch": 40, "num_canonical_nodes": 1, "shuffle_seed": 9176}
    )
    assert [int(s["id"]) for s in ours] == fourth[40:]


def test_resume_past_the_end_raises(dirs: dict[str, str]) -> None:
    pair = Pair(dirs, "small", shuffle=True)
    pair.load({"epoch": 0, "sample_in_epoch": 500, "num_canonical_nodes": 1, "shuffle_seed": 9176})
    pair.epoch_raises()


def test_state_dict_before_iteration(dirs: dict[str, str]) -> None:
    pair = Pair(dirs, "small", shuffle=True)
    pair.check_state(0)
    assert pair.ours.state_dict(num_samples=0, from_beginning=False)["epoch"] == -1


# Public attributes mosaic users read; streamx serves them from typed values.
PUBLIC = (
    "num_samples",
    "num_shards",
    "num_streams",
    "epoch_size",
    "length",
    "num_canonical_nodes",
    "shuffle_block_size",
    "shuffle_seed",
    "initial_physical_nodes",
    "predownload",
    "cache_limit",
    "batch_size",
    "shuffle",
    "shuffle_algo",
    "partition_algo",
    "batching_method",
    "sampling_method",
    "sampling_granularity",
    "epoch_seed_change",
    "replication",
)
PUBLIC_ARRAYS = (
    "samples_per_shard",
    "sample_offset_per_shard",
    "shard_offset_per_stream",
    "shards_per_stream",
    "samples_per_stream",
    "sample_offset_per_stream",
    "stream_per_shard",
)


def _public(ds: Any) -> dict[str, Any]:
    out = {name: getattr(ds, name) for name in PUBLIC}
    out.update({name: getattr(ds, name).tolist() for name in PUBLIC_ARRAYS})
    out["shards"] = len(ds.shards)
    out["streams"] = len(ds.streams)
    return out


def test_public_attributes_at_each_moment(dirs: dict[str, str]) -> None:
    """The defaults are filled when upstream fills them: at an epoch or a state dict."""
    streams = [("s0", {"proportion": 0.7}), ("s1", {"proportion": 0.3})]
    pair = Pair(dirs, streams, shuffle=True, shuffle_algo="py1s", epoch_size=300)
    assert _public(pair.ours) == _public(pair.theirs)
    assert pair.ours.num_canonical_nodes is None  # not filled before an epoch starts
    pair.check_state(0)  # resolves, as upstream's state_dict does
    assert _public(pair.ours) == _public(pair.theirs)
    assert pair.ours.num_canonical_nodes == 64
    pair.epoch()
    assert _public(pair.ours) == _public(pair.theirs)
    pair.load(
        {
            "epoch": 3,
            "sample_in_epoch": 20,
            "num_canonical_nodes": 2,
            "shuffle_seed": 5,
            "initial_physical_nodes": 1,
        }
    )
    assert _public(pair.ours) == _public(pair.theirs)  # loading alone changes nothing
    pair.epoch()
    assert _public(pair.ours) == _public(pair.theirs)
    ours = pair.ours  # a fresh name: mypy would keep the `is None` narrowing from above
    assert (ours.num_canonical_nodes, ours.shuffle_seed) == (2, 5)


def test_settings_can_be_assigned(dirs: dict[str, str]) -> None:
    """Assigning an order setting, as mosaic users can, changes the order the same way."""
    pair = Pair(dirs, "small", shuffle=True)
    for ds in (pair.ours, pair.theirs):
        ds.num_canonical_nodes = 4
        ds.shuffle_seed = 17
    pair.epoch()
    assert _public(pair.ours) == _public(pair.theirs)
