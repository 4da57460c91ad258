"""N-D meshes with real ranks on gloo: tp/cp peers get identical samples, dp splits the data."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import streamx

RANK_SCRIPT = Path(__file__).with_name("mesh_rank.py")
NUM_SAMPLES = 101
DS = {"batch_size": 2, "shuffle": True, "num_canonical_nodes": 1, "shuffle_block_size": 32}


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def mds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mesh") / "mds"
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=300) as writer:
        for i in range(NUM_SAMPLES):
            writer.write({"id": i})
    return out


def _run(
    tmp: Path, local: str, remote: str, world: int, mesh: dict[str, int | str], phase: str = ""
) -> list[list[int]]:
    """Starts ``world`` rank processes (one node) and returns each rank's sample ids."""
    out, port = tmp / "ids.json", _port()
    procs = []
    for rank in range(world):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(world),
            "LOCAL_WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        args = [local, remote, str(out), json.dumps(mesh), json.dumps(DS), *([phase] * bool(phase))]
        procs.append(
            subprocess.Popen(
                [sys.executable, str(RANK_SCRIPT), *args], env=env, stderr=subprocess.PIPE
            )
        )
    errors = [proc.communicate(timeout=180)[1].decode() for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), errors
    ids: list[list[int]] = json.loads(out.read_text())
    return ids


def test_tp_peers_identical_and_dp_covers_once(mds: Path, tmp_path: Path) -> None:
    """World 4 = dp2 x tp2 (Megatron order): ranks 0,1 and 2,3 equal; dp covers each sample once."""
    meshed = _run(tmp_path, str(tmp_path / "a"), str(mds), 4, {"dp": 2, "tp": 2})
    assert meshed[0] == meshed[1] and meshed[2] == meshed[3]
    # Each sample once per epoch, plus the one padding sample an odd count needs.
    assert set(meshed[0] + meshed[2]) == set(range(NUM_SAMPLES))
    assert len(meshed[0] + meshed[2]) == NUM_SAMPLES + 1
    # The node downloaded every shard once: the dp share of a one-node job is everything.
    shards = sorted(p.name for p in (tmp_path / "a").glob("shard.*.mds"))
    assert shards == sorted(p.name for p in mds.glob("shard.*.mds"))


def test_tp_peers_get_the_same_batches_through_loader_workers(mds: Path, tmp_path: Path) -> None:
    """dp2 x tp2 (world 4), each rank reading through two DataLoader worker processes: each
    tp pair receives the same batches in the same order, the dp ranks read what a plain dp=2
    job with the same workers reads, and each sample once (plus the odd count's padding)."""
    meshed = _run(tmp_path, str(tmp_path / "a"), str(mds), 4, {"dp": 2, "tp": 2}, "workers:2")
    assert meshed[0] == meshed[1] and meshed[2] == meshed[3]
    plain = _run(tmp_path, str(tmp_path / "b"), str(mds), 2, {}, "workers:2")
    assert [meshed[0], meshed[2]] == plain
    assert set(meshed[0] + meshed[2]) == set(range(NUM_SAMPLES))
    assert len(meshed[0] + meshed[2]) == NUM_SAMPLES + 1


@pytest.mark.slow
def test_world8_dp2_pp2_cp2_stages_and_cp_peers_share(mds: Path, tmp_path: Path) -> None:
    """World 8 = dp2 x pp2 x cp2: every stage and cp peer of a dp rank reads what dp=2 does."""
    meshed = _run(tmp_path, str(tmp_path / "a"), str(mds), 8, {"dp": 2, "pp": 2, "cp": 2})
    plain = _run(tmp_path, str(tmp_path / "b"), str(mds), 2, {})
    for rank, ids in enumerate(meshed):
        dp_rank = (rank // 2) % 2  # order tp-cp-dp-pp with tp=1, cp=2
        assert ids == plain[dp_rank], rank


def test_a_state_from_one_mesh_resumes_on_another_as_plain_dp_does(
    mds: Path, tmp_path: Path
) -> None:
    """Stopped after 20 samples per rank at dp2 x tp2 (world 4) and resumed at dp1 x tp2
    (world 2): the same samples as a plain dp=2 run stopped there and resumed on 1 rank;
    nothing seen twice, every sample seen."""
    state, plain_state = tmp_path / "state.json", tmp_path / "plain.json"
    first = _run(
        tmp_path, str(tmp_path / "a"), str(mds), 4, {"dp": 2, "tp": 2}, f"first:20:{state}"
    )
    rest = _run(tmp_path, str(tmp_path / "a"), str(mds), 2, {"dp": 1, "tp": 2}, f"rest:{state}")
    plain_first = _run(tmp_path, str(tmp_path / "b"), str(mds), 2, {}, f"first:20:{plain_state}")
    plain_rest = _run(tmp_path, str(tmp_path / "b"), str(mds), 1, {}, f"rest:{plain_state}")
    assert first[0] == first[1] and first[2] == first[3] and rest[0] == rest[1]
    assert [first[0], first[2]] == plain_first and [rest[0]] == plain_rest
    before = set(first[0]) | set(first[2])
    assert len(before) == 40 and before.isdisjoint(rest[0])
    assert before | set(rest[0]) == set(range(NUM_SAMPLES))
