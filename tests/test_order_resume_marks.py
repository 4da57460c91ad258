"""py1e's resume marks (issue 24): a state dict carries, per canonical node counted on the
checkpointing node, the shuffle's draws a little before the resume point, so that a node
without the count cache resumes without counting. The order is the same with and without
them, in every world; marks of another configuration, damaged or not base64 are ignored; a
state dict with them loads in mosaicml-streaming 0.13.0 and gives its order, and mosaic's own
state dict (no marks) resumes streamx as before."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
import streamx.order.epoch as epoch_module
from count_cache_helpers import private_dir
from plan_configs import plan_config
from streamx import _core
from streamx.order.resume_marks import MARKS_KEY, marked_nodes
from streamx.order.settings import PlanConfig

SIZES = [97] * 300 + [40, 300, 5, 0, 64]
HALF = sum(SIZES) // 2


def _config(**changes: Any) -> PlanConfig:
    return plan_config(SIZES, **{"shuffle_block_size": 512, "sample_in_epoch": HALF, **changes})


def _plan(
    config: PlanConfig, index: tuple[int, int, int], cache: Path, marks: bytes | None
) -> tuple[np.ndarray[Any, Any], int, int]:
    """The worker's share in pieces from a cache directory (every count kept): its ids, the
    canonical nodes seeded from ``marks``, and the nodes it counted (and kept)."""
    pieces, _ = _core.plan_worker_pieces(
        config, *index, count_cache_dir=cache, count_cache_min_samples=0, resume_marks=marks
    )
    out = []
    while len(ids := pieces.next_piece(61)):
        out.append(ids)
    stats = pieces.count_cache_stats
    assert stats is not None
    return np.concatenate(out), pieces.resume_marks_nodes, stats[1]


def _marks(config: PlanConfig, cache: Path) -> bytes:
    """The marks node 0 gives once its workers planned the epoch (counting what they need)."""
    _, ranks, workers = config["world"]
    for rank in range(ranks):
        for worker in range(workers):
            _plan(config, (0, rank, worker), cache, None)
    marks = _core.py1e_resume_marks(config, cache)
    assert marks is not None
    return marks


@pytest.mark.parametrize(
    ("world", "ncn"), [((1, 1, 1), 1), ((2, 1, 1), 2), ((1, 8, 1), 1), ((8, 1, 1), 8)]
)
def test_a_resume_with_marks_orders_as_the_plan(
    tmp_path: Path, world: tuple[int, int, int], ncn: int
) -> None:
    """Every worker of the world, each physical node in a directory of its own: the same ids
    as the whole plan; node 0's workers, whose canonical nodes have marks, count nothing."""
    config = _config(world=world, num_canonical_nodes=ncn)
    marks = _marks(config, private_dir(tmp_path / "checkpointing"))
    nodes, ranks, workers = world
    for node in range(nodes):
        cache = private_dir(tmp_path / f"node{node}")
        for rank in range(ranks):
            for worker in range(workers):
                want, _ = _core.plan_worker(config, node, rank, worker)
                got, seeded, counted = _plan(config, (node, rank, worker), cache, marks)
                np.testing.assert_array_equal(got, want)
                assert seeded == 1  # node 0 counted its one canonical node
                if node == 0:
                    assert counted == 0


def test_foreign_or_damaged_marks_are_ignored(tmp_path: Path) -> None:
    """Marks of another epoch, seed or block size, or altered: nothing seeded, the node counted,
    the same ids."""
    config = _config(world=(1, 2, 1), num_canonical_nodes=1)
    good = _marks(config, private_dir(tmp_path / "a"))
    altered = bytearray(good)
    altered[70] ^= 4
    others = [
        _marks(_config(world=(1, 2, 1), num_canonical_nodes=1, **c), private_dir(tmp_path / k))
        for k, c in {"e": {"epoch": 2}, "s": {"seed": 8}, "b": {"shuffle_block_size": 600}}.items()
    ]
    want, _ = _core.plan_worker(config, 0, 1, 0)
    for i, bad in enumerate([*others, bytes(altered), good[:-3], b""]):
        got, seeded, counted = _plan(config, (0, 1, 0), private_dir(tmp_path / f"r{i}"), bad)
        np.testing.assert_array_equal(got, want)
        assert (seeded, counted) == (0, 1)


def _write(out: Path) -> None:
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=1 << 10) as writer:
        for i in range(3000):
            writer.write({"id": i})


def _ids(ds: Any) -> list[int]:
    return [int(sample["id"]) for sample in ds]


def test_a_state_dict_with_marks_resumes_both_libraries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Through ``StreamingDataset``: a pass counts the epoch, its state dict carries marks; a
    copy of the data that never started the epoch resumes from them without counting, in
    mosaic's order; mosaic loads the same state dict (and its own) to the same order."""
    streaming = pytest.importorskip("streaming")
    from streaming.base.util import clean_stale_shared_memory

    monkeypatch.setattr(epoch_module, "COUNT_CACHE_MIN_SAMPLES", 0)
    caplog.set_level(logging.DEBUG, logger="streamx")
    _write(tmp_path / "data")
    for copy in ("fresh", "mosaic"):
        shutil.copytree(tmp_path / "data", tmp_path / copy)
    kwargs: dict[str, Any] = {"batch_size": 4, "shuffle": True, "shuffle_seed": 5}
    ours = streamx.StreamingDataset(local=str(tmp_path / "data"), **kwargs)
    full = _ids(ours)
    state = ours.state_dict(num_samples=1200, from_beginning=True)
    assert isinstance(state.get(MARKS_KEY), str)
    caplog.clear()
    fresh = streamx.StreamingDataset(local=str(tmp_path / "fresh"), **kwargs)
    fresh.load_state_dict(state)
    assert _ids(fresh) == full[1200:]
    assert "1 canonical nodes from resume marks" in caplog.text
    assert "kept in the count cache" not in caplog.text
    clean_stale_shared_memory()
    try:
        theirs = streaming.StreamingDataset(local=str(tmp_path / "mosaic"), **kwargs)
        theirs.load_state_dict(state)
        assert _ids(theirs) == full[1200:]
        plain = theirs.state_dict(num_samples=1200, from_beginning=True)
        assert MARKS_KEY not in plain
        assert plain == {k: v for k, v in state.items() if k != MARKS_KEY}
    finally:
        clean_stale_shared_memory()
    again = streamx.StreamingDataset(local=str(tmp_path / "fresh"), **kwargs)
    again.load_state_dict(plain)
    assert _ids(again) == full[1200:]


def test_marks_that_are_not_text_are_refused(tmp_path: Path) -> None:
    """A state dict whose marks are not a string is refused by name; text that is not base64
    is ignored (the epoch resumes by counting, same order)."""
    _write(tmp_path / "data")
    ds = streamx.StreamingDataset(local=str(tmp_path / "data"), batch_size=4, shuffle=True)
    state: dict[str, object] = {
        "epoch": 0,
        "sample_in_epoch": 8,
        "num_canonical_nodes": 1,
        "shuffle_seed": 9176,
    }
    with pytest.raises(ValueError, match=MARKS_KEY):
        ds.load_state_dict({**state, MARKS_KEY: [1, 2]})
    ds.load_state_dict({**state, MARKS_KEY: "not base64!"})
    plain = streamx.StreamingDataset(local=str(tmp_path / "data"), batch_size=4, shuffle=True)
    plain.load_state_dict(state)
    assert _ids(ds) == _ids(plain)


def test_counting_every_node_ahead_marks_them_all(tmp_path: Path) -> None:
    """Node 0 of eight counts its own canonical node, so its marks hold that one, and node 7
    resumes by counting all eight. Once every node is counted ahead into node 0's cache, its
    marks hold all eight: node 7 counts nothing, same ids. A second count finds them all."""
    config = _config(world=(8, 1, 1), num_canonical_nodes=8)
    cache = private_dir(tmp_path / "node0")
    _plan(config, (0, 0, 0), cache, None)
    one = _core.py1e_resume_marks(config, cache)
    assert marked_nodes(one) == 1
    want, _ = _core.plan_worker(config, 7, 0, 0)
    got, _, counted = _plan(config, (7, 0, 0), private_dir(tmp_path / "a"), one)
    np.testing.assert_array_equal(got, want)
    assert counted == 8

    assert _core.py1e_count_every_node(config, cache, 0) == (1, 8, None)
    every = _core.py1e_resume_marks(config, cache)
    assert marked_nodes(every) == 8
    got, seeded, counted = _plan(config, (7, 0, 0), private_dir(tmp_path / "b"), every)
    np.testing.assert_array_equal(got, want)
    assert (seeded, counted) == (8, 0)
    assert _core.py1e_count_every_node(config, cache, 0) == (8, 0, None)
    other = _config(world=(8, 1, 1), num_canonical_nodes=8, shuffle_algo="py1s")
    assert _core.py1e_count_every_node(other, cache, 0) is None


def test_a_nodes_loader_workers_count_every_node_for_its_state_dicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Node 0 of two reads its share with two DataLoader worker processes; its first worker
    counts node 1's canonical node in the background, so node 0's state dict marks both, and
    node 1, on a copy that never started the epoch, resumes from them without counting, in
    the order it reaches without marks."""
    torch_data = pytest.importorskip("torch.utils.data")
    monkeypatch.setattr(epoch_module, "COUNT_CACHE_MIN_SAMPLES", 0)
    _write(tmp_path / "node0")
    for copy in ("node1", "plain"):
        shutil.copytree(tmp_path / "node0", tmp_path / copy)
    kwargs: dict[str, Any] = {"batch_size": 4, "shuffle": True, "shuffle_seed": 5}
    kwargs["num_canonical_nodes"] = 2
    env = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    for name, value in {**env, "RANK": "0"}.items():
        monkeypatch.setenv(name, value)
    ours = streamx.StreamingDataset(local=str(tmp_path / "node0"), **kwargs)
    # Forked, so that the workers see the lowered threshold (a spawned one imports afresh).
    loader = torch_data.DataLoader(
        ours, batch_size=4, num_workers=2, multiprocessing_context="fork"
    )
    assert sum(len(batch["id"]) for batch in loader) == 1500
    deadline = time.monotonic() + 60
    while True:  # the count ahead may still run once the loader is done
        state = ours.state_dict(num_samples=1200, from_beginning=True)
        if marked_nodes(state.get(MARKS_KEY)) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert marked_nodes(state.get(MARKS_KEY)) == 2

    monkeypatch.setenv("RANK", "1")
    plain = streamx.StreamingDataset(local=str(tmp_path / "plain"), **kwargs)
    plain.load_state_dict({k: v for k, v in state.items() if k != MARKS_KEY})
    want = _ids(plain)
    assert len(want) == 1500 - 600
    caplog.set_level(logging.DEBUG, logger="streamx")
    caplog.clear()
    fresh = streamx.StreamingDataset(local=str(tmp_path / "node1"), **kwargs)
    fresh.load_state_dict(state)
    assert _ids(fresh) == want
    assert "2 canonical nodes from resume marks" in caplog.text
    assert "kept in the count cache" not in caplog.text
