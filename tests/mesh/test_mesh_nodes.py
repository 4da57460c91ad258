"""Mesh jobs over an nginx remote with real rank processes on simulated nodes: middle
pipeline stages fetch nothing, and each node fetches its data-parallel share once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nginx_server import find_nginx
from node_jobs import Job, run_job, write_mds
from stage_rank import RESUME_AT

NUM_SAMPLES = 101

pytestmark = [pytest.mark.remote, pytest.mark.dist, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def mds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if find_nginx() is None:
        pytest.fail("nginx is required (apt-get install -y nginx)")
    return write_mds(tmp_path_factory.mktemp("nodes") / "mds", NUM_SAMPLES)


def _shards(mds: Path) -> tuple[list[tuple[int, str]], dict[str, int]]:
    """Each shard's first sample id and file name, and each file's size, from the index."""
    starts, sizes, begin = [], {}, 0
    for shard in json.loads((mds / "index.json").read_text())["shards"]:
        name = shard["raw_data"]["basename"]
        starts.append((begin, name))
        sizes[name] = shard["raw_data"]["bytes"]
        begin += shard["samples"]
    return starts, sizes


def _shard_of(starts: list[tuple[int, str]], sample: int) -> str:
    return [name for begin, name in starts if begin <= sample][-1]


def _read(job: Job, ranks: range) -> list[int]:
    return [i for r in ranks for key in ("epoch0", "epoch1", "rest") for i in job.ranks[r][key]]


def test_middle_pipeline_stage_fetches_nothing(mds: Path, tmp_path: Path) -> None:
    """dp2 x pp3 on 3 nodes of 2 ranks (a stage a node), skip_pipeline_middle: the first
    and last stages read the same samples, the middle one yields nothing and its node
    fetches no shard, and every rank's resume state is the same."""
    mesh: dict[str, int | bool] = {"dp": 2, "pp": 3, "skip_pipeline_middle": True}
    job = run_job(tmp_path, mds, 3, 2, mesh, {"batch_size": 2, "shuffle": True})
    first, middle, last = job.ranks[0:2], job.ranks[2:4], job.ranks[4:6]
    for key in ("epoch0", "epoch1", "rest"):
        assert [seen[key] for seen in first] == [seen[key] for seen in last], key
        assert [seen[key] for seen in middle] == [[], []], key
    epoch0 = first[0]["epoch0"] + first[1]["epoch0"]  # plus the padding an odd count needs
    assert set(epoch0) == set(range(NUM_SAMPLES)) and len(epoch0) == NUM_SAMPLES + 1
    # Loaded on every rank of a restarted job: the reading stages go on where it says.
    for seen in first + last:
        assert seen["rest"] == seen["epoch1"][RESUME_AT // 2 :]
    assert len({json.dumps(seen["state"]) for seen in job.ranks}) == 1
    assert len({json.dumps(seen["after"]) for seen in job.ranks}) == 1
    assert job.ranks[0]["state"]["epoch"] == 1
    # The middle node fetched the index (for len() and the state) and no shard.
    assert set(job.sent[1]) == {"index.json"} and job.cached[1] == {"index.json"}
    _, sizes = _shards(mds)
    for node in (0, 2):
        assert set(job.sent[node]) == {"index.json", *sizes}


@pytest.mark.parametrize(
    "mesh",
    [{"dp": 4, "tp": 2}, pytest.param({"dp": 2, "tp": 2, "cp": 2}, marks=pytest.mark.slow)],
    ids=["dp4-tp2", "dp2-tp2-cp2"],
)
def test_each_node_fetches_its_dp_share_once(
    mds: Path, tmp_path: Path, mesh: dict[str, int | bool]
) -> None:
    """2 nodes of 4 ranks: each node's GETs are exactly the shards its ranks read, each
    once (its tp and cp peers share the downloads), byte for byte, and less than the
    dataset."""
    job = run_job(tmp_path, mds, 2, 4, mesh, {"batch_size": 2, "shuffle": True})
    starts, sizes = _shards(mds)
    for node in (0, 1):
        share = {_shard_of(starts, i) for i in _read(job, range(4 * node, 4 * node + 4))}
        assert 0 < len(share) < len(sizes), node
        fetched = {name: sent for name, sent in job.sent[node].items() if name != "index.json"}
        assert fetched == {name: sizes[name] for name in share}, node
        assert all(job.gets[node][name] == 1 for name in share), job.gets[node]
        assert job.cached[node] == {"index.json", *share}, node
