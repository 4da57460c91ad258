"""A worker's order in pieces (issue 24): ``_core.plan_worker_pieces`` hands out exactly
``plan_worker``'s ids (itself equal to mosaicml-streaming's order, see tests/compat), whatever
the piece sizes, resume point or configuration; a dataset walked in small pieces reads what
it reads in one; and an epoch of 10^10 samples, far beyond what the whole plan can hold,
gives its first piece in bounded memory."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import streamx
import streamx.order.epoch as epoch_module
from plan_configs import plan_config
from streamx import _core
from streamx.dataset.iteration import worker_batches
from streamx.order.epoch import worker_id_pieces, worker_sample_ids
from streamx.order.world import World


def _concat(pieces: _core.WorkerPieces, size: int) -> NDArray[np.int64]:
    out: list[NDArray[np.int64]] = []
    while True:
        ids = pieces.next_piece(size)
        if not len(ids):
            return np.concatenate(out) if out else np.zeros(0, np.int64)
        out.append(ids)


SIZES = [37, 120, 0, 88, 400, 5, 61, 230, 17, 150]

# (changes, planned lazily)
CONFIGS: list[tuple[dict[str, Any], bool]] = [
    ({}, True),
    ({"shuffle_block_size": 1}, True),
    ({"shuffle_block_size": 20_000, "num_canonical_nodes": 1}, True),
    ({"num_canonical_nodes": 8, "world": (4, 2, 1), "partition_algo": "orig"}, True),
    ({"sample_in_epoch": 8}, True),
    ({"sample_in_epoch": 301, "batch_size": 3}, True),
    ({"world": (3, 2, 2), "initial_physical_nodes": 2, "batch_size": 6}, True),
    ({"world": (1, 8, 2), "num_canonical_nodes": 2}, True),
    ({"streams": [(SIZES, 1700, 1.5)]}, True),
    ({"streams": [(SIZES[:5], 300, 0.5), (SIZES[5:], 500, 0.5)]}, True),
    ({"shuffle": False}, True),
    ({"shuffle": False, "sample_in_epoch": 12}, True),
    ({"shuffle_algo": "py1s"}, True),
    ({"shuffle_algo": "py1s", "sample_in_epoch": 301, "batch_size": 3}, True),
    ({"shuffle_algo": "py1s", "world": (3, 2, 2), "initial_physical_nodes": 2}, True),
    ({"shuffle_algo": "py1s", "num_canonical_nodes": 8, "world": (4, 2, 1)}, True),
    ({"shuffle_algo": "py1s", "streams": [(SIZES[:5], 300, 0.5), (SIZES[5:], 500, 0.5)]}, True),
    ({"shuffle_algo": "py2s"}, True),
    ({"shuffle_algo": "py2s", "sample_in_epoch": 301, "batch_size": 3}, True),
    ({"shuffle_algo": "py2s", "num_canonical_nodes": 8, "world": (4, 2, 1)}, True),
    ({"shuffle_algo": "py1br"}, True),
    ({"shuffle_algo": "py1br", "shuffle_block_size": 40, "sample_in_epoch": 301}, True),
    (
        {
            "shuffle_algo": "py1br",
            "shuffle_block_size": 7,
            "world": (1, 8, 2),
            "num_canonical_nodes": 2,
        },
        True,
    ),
    ({"shuffle_algo": "naive"}, False),
    ({"batching_method": "per_stream"}, False),
    (
        {
            "batching_method": "stratified",
            "streams": [(SIZES[:5], 300, 0.5), (SIZES[5:], 500, 0.5)],
        },
        False,
    ),
]


@pytest.mark.parametrize(("changes", "lazy"), CONFIGS)
def test_pieces_equal_the_whole_worker_plan(changes: dict[str, Any], lazy: bool) -> None:
    config = plan_config(SIZES, **changes)
    nodes, ranks, workers = config["world"]
    for index in itertools.product(range(nodes), range(ranks), range(workers)):
        want, want_messages = _core.plan_worker(config, *index)
        for size in (1, 7, 64, 10**9):
            pieces, messages = _core.plan_worker_pieces(config, *index)
            assert pieces.lazy is lazy
            assert messages == want_messages
            assert len(pieces) == len(want)
            got = _concat(pieces, size)
            assert pieces.position == len(want)
            np.testing.assert_array_equal(got, want, err_msg=f"{index} pieces of {size}")


def test_random_configurations_in_random_pieces() -> None:
    rng = random.Random(24)
    for _ in range(40):
        sizes = [rng.randint(0, 300) for _ in range(rng.randint(1, 25))]
        if not sum(sizes):
            continue
        world = rng.choice([(1, 1, 1), (2, 2, 2), (1, 4, 2), (4, 1, 1)])
        config = plan_config(
            sizes,
            world=world,
            num_canonical_nodes=rng.choice([1, 2, 4, 8]),
            shuffle_block_size=rng.choice([1, 40, 300, 5000]),
            batch_size=rng.choice([1, 3, 8]),
            sample_in_epoch=rng.choice([0, 5, 64]),
            epoch=rng.randint(0, 5),
            shuffle_algo=rng.choice(["py1e", "py1s", "py2s", "py1br"]),
        )
        index = tuple(rng.randrange(d) for d in world)
        message: str | None
        try:
            want, want_messages = _core.plan_worker(config, *index)
        except ValueError as err:
            message = str(err)
        else:
            message = None
        if message is not None:
            with pytest.raises(ValueError) as lazy_err:
                _core.plan_worker_pieces(config, *index)
            assert str(lazy_err.value) == message
            continue
        pieces, messages = _core.plan_worker_pieces(config, *index)
        assert messages == want_messages
        out = []
        while len(piece := pieces.next_piece(rng.randint(1, 50))):
            out.append(piece)
        got = np.concatenate(out) if out else np.zeros(0, np.int64)
        np.testing.assert_array_equal(got, want, err_msg=str(config))


def test_bad_arguments_are_clear_errors() -> None:
    config = plan_config(SIZES)
    with pytest.raises(ValueError, match="outside the world"):
        _core.plan_worker_pieces(config, 2, 0, 0)
    pieces, _ = _core.plan_worker_pieces(config, 0, 0, 0)
    with pytest.raises(ValueError, match="max_len"):
        pieces.next_piece(0)
    with pytest.raises(ValueError, match="first <= cap"):
        worker_id_pieces(config, World(2, 2, 0, 2), first=8, cap=4)


def test_worker_id_pieces_are_the_worker_ids_without_padding() -> None:
    config = plan_config(SIZES, world=(1, 2, 2), batch_size=16)
    for worker in range(2):
        world = World(
            num_nodes=1, ranks_per_node=2, rank=1, workers_per_rank=2, worker_of_rank=worker
        )
        want = worker_sample_ids(config, world)
        want = want[want >= 0]
        pieces = list(worker_id_pieces(config, world, first=3, cap=40))
        assert all(0 < len(p) <= 40 for p in pieces)
        np.testing.assert_array_equal(np.concatenate(pieces), want)


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pieces") / "data"
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=1 << 10) as writer:
        for i in range(700):
            writer.write({"id": i})
    return out


@pytest.mark.parametrize("state", [None, 37])
def test_a_dataset_walked_in_small_pieces_reads_the_same(
    dataset_dir: Path, monkeypatch: pytest.MonkeyPatch, state: int | None
) -> None:
    """The pass in pieces of 5 to 17 samples (shard windows, batches across pieces, drop_last,
    a resumed epoch) reads what one piece reads."""

    def walk() -> tuple[list[int], list[list[int]], list[list[int]]]:
        def make() -> streamx.StreamingDataset:
            ds = streamx.StreamingDataset(local=str(dataset_dir), batch_size=4, shuffle=True)
            if state is not None:
                ds.load_state_dict(
                    {
                        "epoch": 0,
                        "sample_in_epoch": state,
                        "num_canonical_nodes": 1,
                        "shuffle_seed": 7,
                        "initial_physical_nodes": None,
                    }
                )
            return ds

        samples = [int(s["id"]) for s in make()]
        batched = []
        for drop_last in (False, True):
            claimed = make().claim_pass()
            batches = worker_batches(
                claimed.start,
                claimed.layout,
                claimed.world,
                claimed.access,
                lambda ids: ids,
                batch_size=5,
                drop_last=drop_last,
            )
            batched.append([[i for part in parts for i in part] for parts in batches])
        return samples, batched[0], batched[1]

    whole = walk()
    monkeypatch.setattr(epoch_module, "FIRST_PIECE", 5)
    monkeypatch.setattr(epoch_module, "MAX_PIECE", 17)
    pieces = walk()
    assert pieces == whole
    samples, batches, dropped = whole
    assert sorted(samples) == sorted(i for batch in batches for i in batch)
    assert len(samples) == 700 - (state or 0)
    assert all(len(b) == 5 for b in dropped) and dropped == batches[: len(dropped)]


@pytest.mark.parametrize("algo", ["py1e", "py1s", "py2s", "py1br"])
def test_ten_billion_samples_first_piece_in_bounded_memory(tmp_path: Path, algo: str) -> None:
    """10^10 samples (10^5 shards of 10^5): the whole plan cannot be held; the first piece
    comes under a 3 GiB address-space limit with under 1 GiB resident."""
    script = textwrap.dedent(
        """
        import resource
        import numpy as np
        from streamx import _core

        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        sizes = [100_000] * 100_000
        config = {
            "streams": [(sizes, sum(sizes), 1.0)], "seed": 9176, "epoch": 0,
            "shuffle": True, "shuffle_algo": ALGO, "shuffle_block_size": 1 << 18,
            "num_canonical_nodes": 64, "partition_algo": "relaxed",
            "batching_method": "random", "batch_size": 32, "world": (64, 1, 1),
            "sample_in_epoch": 0, "initial_physical_nodes": None,
            "sampling_method": "balanced", "sampling_granularity": 1,
        }
        pieces, messages = _core.plan_worker_pieces(config, 0, 0, 0)
        first = pieces.next_piece(1 << 14)
        second = pieces.next_piece(1 << 14)
        ids = np.concatenate((first, second))
        print("slots", len(pieces) >= 10**10 // 64)
        print("piece", len(ids), len(np.unique(ids)))
        print("range", int(ids.min()) >= 0, int(ids.max()) < 10**10)
        # This process's own high-water mark: ru_maxrss would carry the parent's (pytest's,
        # 2 GiB late in a CI run) over fork and exec.
        with open("/proc/self/status") as status:
            hwm = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
        print("hwm_kib", hwm)
        try:
            _core.plan_worker(config, 0, 0, 0)
        except (MemoryError, ValueError) as err:
            print("whole:", type(err).__name__)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script.replace("ALGO", repr(algo))],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["whole:"] in ("MemoryError", "ValueError"), done.stdout
    assert lines["slots"] == "True", done.stdout
    assert lines["piece"] == "32768 32768", done.stdout  # distinct ids
    assert lines["range"] == "True True", done.stdout
    assert int(lines["hwm_kib"]) < 1 << 20, done.stdout


def test_the_look_ahead_reaches_into_the_next_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read in pieces of 50 samples from a remote of 20-sample shards with a look-ahead of
    200 samples: every shard is declared ahead to the shard cache before a chunk reads it,
    the next piece's included. Were each piece's look-ahead to stop at its own end, the
    first shards of every next piece would be read without ever having been fetched ahead."""
    remote = tmp_path / "remote"
    with streamx.MDSWriter(out=str(remote), columns={"id": "int"}, size_limit=256) as writer:
        for i in range(300):
            writer.write({"id": i})
    monkeypatch.setattr(epoch_module, "FIRST_PIECE", 50)
    monkeypatch.setattr(epoch_module, "MAX_PIECE", 50)
    ds = streamx.StreamingDataset(
        remote=str(remote), local=str(tmp_path / "cache"), batch_size=4, predownload=200
    )
    cache = ds._shard_cache
    assert cache is not None
    calls: list[tuple[list[int], list[int]]] = []
    set_window = cache.set_window

    def recorded(reading: Any, ahead: Any = (), *, same: bool = False) -> Any:
        calls.append(([int(s) for s in reading], [int(s) for s in ahead]))
        return set_window(reading, ahead, same=same)

    monkeypatch.setattr(cache, "set_window", recorded)
    got = [int(s["id"]) for s in ds]
    assert got == list(range(300))
    declared = set(calls[0][0]) | set(calls[0][1])
    late = []
    for reading, ahead in calls[1:]:
        late += [s for s in reading if s not in declared]
        declared |= set(reading) | set(ahead)
    assert len(calls) > 6  # several pieces, each read in at least one chunk
    assert late == []


@pytest.mark.parametrize("unit", [1, 4])
def test_the_first_batch_waits_for_one_piece_only(unit: int) -> None:
    """The pass's first part is yielded before the second piece is planned (a plan costs a
    shift margin whatever the piece's size); every part is read once, in order, cut at
    batch boundaries, and each looks ahead into what follows it."""
    from streamx.dataset.iteration import _with_next

    planned: list[int] = []
    sizes = [40, 80, 160, 13]

    def pieces() -> Any:
        start = 0
        for size in sizes:
            planned.append(size)
            yield np.arange(start, start + size, dtype=np.int64)
            start += size

    parts = _with_next(pieces(), unit)
    ids, own = next(parts)
    assert planned == [40]  # the first part came before the second piece was planned
    assert (own, ids.tolist()) == (20, list(range(40)))  # its look-ahead: the piece's rest
    read, rest = list(ids[:own]), list(parts)
    for ids, own in rest:
        assert own % unit == 0 or ids is rest[-1][0]  # only the last part ends mid-batch
        read += ids[:own].tolist()
    assert read == list(range(sum(sizes)))
    assert [own for _, own in rest] == [20, 80, 160, 13]
    assert [len(ids) for ids, _ in rest] == [100, 240, 173, 13]  # each with the next piece
