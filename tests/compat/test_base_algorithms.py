"""``streamx.base`` compression, hashing, shuffles, partitions, sampling, spanner and
``generate_work``, with mosaicml-streaming 0.13.0 as the oracle."""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("streaming")
import streaming
import streaming.base.batching as their_batching
import streaming.base.compression as their_compression
import streaming.base.hashing as their_hashing
import streaming.base.partition as their_partition
import streaming.base.sampling as their_sampling
import streaming.base.shuffle as their_shuffle
import streaming.base.spanner as their_spanner
from streaming.base.world import World as TheirWorld

import streamx
import streamx.base.batching as batching
import streamx.base.compression as compression
import streamx.base.hashing as hashing
import streamx.base.partition as partition
import streamx.base.sampling as sampling
import streamx.base.shuffle as shuffle
import streamx.base.spanner as spanner
from streamx.base.world import World

pytestmark = pytest.mark.compat

DATA = [b"", b"a", b"hello world " * 50, bytes(range(256)) * 40]


def test_compression_catalogue_matches() -> None:
    assert compression.get_compressions() == their_compression.get_compressions()
    for algo in [*sorted(their_compression.get_compressions()), None, "zstd:0", "lz4", ""]:
        assert compression.is_compression(algo) == their_compression.is_compression(algo)


@pytest.mark.parametrize("algo", ["br:1", "bz2", "gz:4", "snappy", "zstd", "zstd:19"])
def test_compression_round_trips_across_libraries(algo: str) -> None:
    for data in DATA:
        ours = compression.compress(algo, data)
        assert their_compression.decompress(algo, ours) == data
        assert compression.decompress(algo, their_compression.compress(algo, data)) == data
    assert compression.get_compression_extension(
        algo
    ) == their_compression.get_compression_extension(algo)


def test_compression_none_and_unknown() -> None:
    assert compression.compress(None, b"x") == b"x"
    assert compression.decompress(None, b"x") == b"x"
    for fn in (compression.compress, compression.decompress, their_compression.compress):
        with pytest.raises(ValueError, match="not a supported compression"):
            fn("lz4", b"x")
    with pytest.raises(ValueError, match="not a supported compression"):
        compression.get_compression_extension("zstd:99")


def test_hashes_match() -> None:
    assert hashing.get_hashes() == their_hashing.get_hashes()
    for algo in sorted(their_hashing.get_hashes()):
        assert hashing.is_hash(algo)
        for data in DATA:
            assert hashing.get_hash(algo, data) == their_hashing.get_hash(algo, data), algo
    assert not hashing.is_hash("crc32")
    with pytest.raises(ValueError, match="not a supported hash"):
        hashing.get_hash("crc32", b"")


def _quiet(fn: Any, *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


SHARDS = [np.array([7, 3, 9, 12, 5, 5, 8], np.int64), np.array([40] * 6, np.int64)]


@pytest.mark.parametrize("algo", ["naive", "py1br", "py1e", "py1s", "py2s"])
@pytest.mark.parametrize("sizes", SHARDS, ids=["uneven", "even"])
@pytest.mark.parametrize(("ncn", "seed", "epoch", "block"), [(1, 0, 0, 16), (2, 17, 3, 50)])
def test_shuffles_match(algo: str, sizes: Any, ncn: int, seed: int, epoch: int, block: int) -> None:
    args = (sizes, ncn, seed, epoch, block)
    ours = _quiet(shuffle.get_shuffle, algo, *args)
    assert np.array_equal(ours, _quiet(their_shuffle.get_shuffle, algo, *args))
    direct = shuffle.algos[algo]
    assert np.array_equal(ours, _quiet(direct, *args))
    module = __import__(f"streamx.base.shuffle.{algo}", fromlist=["_"])
    assert np.array_equal(ours, _quiet(getattr(module, f"get_shuffle_{algo}"), *args))


def test_shuffle_warns_like_mosaic_on_small_blocks() -> None:
    with pytest.warns(UserWarning, match="Shuffle block size was smaller than shard size"):
        shuffle.get_shuffle("py1e", np.array([50, 50]), 1, 0, 0, 10)
    with pytest.raises(KeyError):
        shuffle.get_shuffle("nope", np.array([5]), 1, 0, 0)


PARTITION_CASES = [
    (100, 1, 1, 1, 1, 1, 0, None),
    (1000, 4, 2, 8, 2, 4, 0, None),
    (1000, 2, 4, 2, 3, 5, 37, None),
    (977, 8, 2, 4, 2, 3, 100, 4),
    (64, 2, 2, 2, 2, 2, 0, 1),
]


@pytest.mark.parametrize("algo", ["orig", "relaxed"])
@pytest.mark.parametrize("case", PARTITION_CASES)
def test_partitions_match(algo: str, case: tuple[Any, ...]) -> None:
    theirs = _quiet(their_partition.get_partitions, algo, *case)
    ours = _quiet(partition.get_partitions, algo, *case)
    assert np.array_equal(ours, theirs)
    assert np.array_equal(ours, _quiet(partition.algos[algo], *case))


def test_partition_errors() -> None:
    with pytest.raises(ValueError):
        partition.get_partitions("orig", 10, 3, 2, 1, 1, 1)
    with pytest.raises(ValueError):
        their_partition.get_partitions("orig", 10, 3, 2, 1, 1, 1)


@pytest.mark.parametrize("choose", [1, 17, 40, 90])
@pytest.mark.parametrize("granularity", [1, 4, 100])
@pytest.mark.parametrize("use_epoch", [False, True])
def test_sampling_matches(choose: int, granularity: int, use_epoch: bool) -> None:
    sizes = np.array([10, 3, 15, 12], np.int64)
    for epoch in (0, 2):
        args = (sizes, choose, granularity, 31, epoch, use_epoch)
        assert np.array_equal(sampling.get_sampling(*args), their_sampling.get_sampling(*args))


def test_spanner_matches() -> None:
    sizes = np.array([3, 0, 9, 1, 1024, 7], np.int64)
    ours, theirs = spanner.Spanner(sizes, 8), their_spanner.Spanner(sizes, 8)
    for index in range(int(sizes.sum())):
        assert ours[index] == theirs[index]
    for bad in (-1, int(sizes.sum())):
        with pytest.raises(IndexError):
            ours[bad]


def _write_streams(root: str) -> list[str]:
    dirs = []
    for stream, count in enumerate((37, 61)):
        out = os.path.join(root, f"s{stream}")
        with streamx.MDSWriter(out=out, columns={"x": "int"}, size_limit=200) as writer:
            for i in range(count):
                writer.write({"x": 1000 * stream + i})
        dirs.append(out)
    return dirs


@pytest.mark.parametrize("method", ["random", "stratified", "per_stream", "device_per_stream"])
def test_generate_work_matches(tmp_path: Any, method: str) -> None:
    dirs = _write_streams(str(tmp_path))
    common: dict[str, Any] = {"batch_size": 4, "shuffle": True, "num_canonical_nodes": 2}
    common["shuffle_block_size"] = 64  # both libraries fill it in only when iteration starts
    ours_ds = streamx.StreamingDataset(
        streams=[
            streamx.Stream(local=dirs[0], proportion=0.3),
            streamx.Stream(local=dirs[1], proportion=0.7),
        ],
        **common,
    )
    their_ds = streaming.StreamingDataset(
        streams=[
            streaming.Stream(local=dirs[0], proportion=0.3),
            streaming.Stream(local=dirs[1], proportion=0.7),
        ],
        **common,
    )
    for shape, epoch, seen in [((2, 2, 2, 0), 0, 0), ((1, 2, 3, 0), 1, 8), ((2, 1, 1, 0), 2, 0)]:
        ours = batching.generate_work(method, ours_ds, World(*shape), epoch, seen)
        theirs = their_batching.generate_work(method, their_ds, TheirWorld(*shape), epoch, seen)
        assert np.array_equal(ours, theirs), (method, shape, epoch)
        direct = batching.batching_methods[method]
        assert np.array_equal(direct(ours_ds, World(*shape), epoch, seen), ours)
