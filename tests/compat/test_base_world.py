"""``streamx.base.world.World`` against mosaicml-streaming's ``World``, over many shapes."""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("streaming")
from streaming.base.world import World as Theirs

from streamx.base.world import World
from streamx.order.world import World as StreamxWorld

pytestmark = pytest.mark.compat

SHAPES = [(1, 1, 1), (1, 8, 1), (2, 4, 3), (3, 2, 2), (4, 8, 8), (6, 1, 5)]


def _cases() -> list[tuple[int, int, int, int]]:
    out = []
    for nodes, ranks, workers in SHAPES:
        total = nodes * ranks * workers
        for worker in sorted({0, 1, total // 2, total - 1} & set(range(total))):
            out.append((nodes, ranks, workers, worker))
    return out


@pytest.mark.parametrize("args", _cases())
def test_attributes_match(args: tuple[int, int, int, int]) -> None:
    ours, theirs = World(*args), Theirs(*args)
    assert ours.to_json() == theirs.to_json()
    assert ours.copy().to_json() == theirs.copy().to_json()
    assert isinstance(ours, StreamxWorld)


@pytest.mark.parametrize("args", _cases())
@pytest.mark.parametrize("replication", [1, 2, 3, 4, 8])
def test_replicate_matches(args: tuple[int, int, int, int], replication: int) -> None:
    ours, theirs = World(*args), Theirs(*args)
    if theirs.num_ranks % replication:
        with pytest.raises(ValueError, match="divisible"):
            ours.replicate(replication)
        return
    assert ours.replicate(replication).to_json() == theirs.replicate(replication).to_json()


@pytest.mark.parametrize("bad", [0, -2])
def test_replicate_rejects_non_positive(bad: int) -> None:
    for world in (World(1, 2, 1, 0), Theirs(1, 2, 1, 0)):
        with pytest.raises(ValueError, match="positive"):
            world.replicate(bad)


@pytest.mark.parametrize(
    ("world_size", "local_world_size", "rank"),
    [(1, 1, 0), (8, 8, 5), (16, 8, 9), (12, 4, 11), (6, 2, 0)],
)
def test_detect_matches(
    monkeypatch: pytest.MonkeyPatch, world_size: int, local_world_size: int, rank: int
) -> None:
    monkeypatch.setenv("WORLD_SIZE", str(world_size))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(local_world_size))
    monkeypatch.setenv("RANK", str(rank))
    ours, theirs = World.detect(), Theirs.detect()
    assert type(ours) is World
    assert ours.to_json() == theirs.to_json()
    assert ours.detect_workers().to_json() == theirs.detect_workers().to_json()


def test_detect_rejects_rank_outside_world(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(ValueError, match="RANK"):
        World.detect()


@pytest.mark.parametrize(
    ("args", "match"), [((0, 1, 1, 0), "num_nodes"), ((1, 2, 2, 4), "worker must be")]
)
def test_constructor_rejects_impossible_worlds(args: tuple[int, int, int, int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        World(*args)


def test_pickles_and_drives_the_streamx_planner() -> None:
    world = World(2, 4, 3, 17)
    again = pickle.loads(pickle.dumps(world))
    assert again.to_json() == world.to_json()
    assert (again.rank, again.worker_of_rank, again.node) == (5, 2, 1)
