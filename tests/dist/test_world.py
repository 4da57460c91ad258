"""World detection from torchrun's variables, against mosaicml-streaming's ``World``."""

from __future__ import annotations

import pytest

from streamx.order.world import World

pytestmark = [pytest.mark.dist, pytest.mark.timeout(300)]  # multi-process runs

CASES = [
    {},
    {"RANK": "3", "WORLD_SIZE": "4"},  # no LOCAL_WORLD_SIZE: one rank per node
    {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "LOCAL_RANK": "1"},
    {"RANK": "0", "WORLD_SIZE": "6", "LOCAL_WORLD_SIZE": "3"},
]


@pytest.mark.parametrize("env", CASES)
@pytest.mark.parametrize("replication", [None, 2])
def test_world_matches_mosaic(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], replication: int | None
) -> None:
    base = pytest.importorskip("streaming.base.world")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    ours, theirs = World.detect(), base.World.detect()
    if replication and ours.num_ranks % replication == 0:
        ours, theirs = ours.replicate(replication), theirs.replicate(replication)
    got = (ours.num_nodes, ours.ranks_per_node, ours.rank, ours.node, ours.rank_of_node)
    want = (theirs.num_nodes, theirs.ranks_per_node, theirs.rank, theirs.node, theirs.rank_of_node)
    assert got == want


def test_bad_world_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "6")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    with pytest.raises(ValueError, match="multiple of LOCAL_WORLD_SIZE"):
        World.detect()
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "6")
    with pytest.raises(ValueError, match="RANK"):
        World.detect()
