"""Real processes: each rank of a Parquet, WebDataset or LitData run sees what the same rank
of the equivalent MDS run sees, at world sizes 1, 2 and 8, and together the ranks see every
row."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from lit_data import write_litdata
from pq_data import write_mds_like, write_parquet
from wds_data import write_tars

pytestmark = pytest.mark.dist
_RANK = Path(__file__).with_name("rank_main.py")


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(world: int, kind: str, source: str, local: str, out: Path) -> list[list[int]]:
    port = _port()
    procs = []
    for rank in range(world):
        env = {
            **os.environ,
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        target = out / f"{kind}-{world}-{rank}.json"
        procs.append(
            subprocess.Popen(
                [sys.executable, str(_RANK), kind, source, local, str(target)],
                env=env,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for proc in procs:
        _, err = proc.communicate(timeout=100)
        assert proc.returncode == 0, err[-4000:]
    return [json.loads((out / f"{kind}-{world}-{r}.json").read_text()) for r in range(world)]


_SIZES = [16, 16, 16, 16, 16, 10, 16, 16, 5]  # row groups, tars and MDS shards alike
_CHUNKS = [16] * 7 + [15]  # LitData's chunks of the same 127 samples


def _write_source(kind: str, folder: Path) -> list[int]:
    """The source's samples 0..126; returns its shard sizes."""
    if kind == "parquet":
        write_parquet(str(folder / "a.parquet"), 90, 16)
        write_parquet(str(folder / "b.parquet"), 37, 16, start=90)
    elif kind == "litdata":
        write_litdata(str(folder), 127, 16, images=False)
        return _CHUNKS
    else:
        write_tars(str(folder), _SIZES)
    return _SIZES


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("kind", "world"),
    [
        ("parquet", 1),
        ("parquet", 2),
        pytest.param("parquet", 8, marks=pytest.mark.slow),  # the same path as tars at 8
        ("wds", 1),
        ("wds", 2),
        ("wds", 8),
        ("litdata", 2),
    ],
)
def test_ranks_match_mds(tmp_path: Path, world: int, kind: str) -> None:
    sizes = _write_source(kind, tmp_path / "src")
    write_mds_like(str(tmp_path / "mds"), sizes)
    ranks = _run(world, kind, str(tmp_path / "src"), str(tmp_path / "c"), tmp_path)
    mds_ranks = _run(world, "mds", str(tmp_path / "mds"), "", tmp_path)
    assert ranks == mds_ranks
    assert set().union(*map(set, ranks)) == set(range(127))


_RESUME = Path(__file__).with_name("rank_resume.py")


def _run_phase(
    world: int, kind: str, source: str, local: str, out: Path, phase: str, k: int
) -> list[list[int]]:
    port = _port()
    procs = []
    for rank in range(world):
        env = {
            **os.environ,
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        target = out / f"{kind}-{phase}-{world}-{rank}.json"
        args = [kind, source, local, str(target), phase, str(out / f"{kind}-state.json"), str(k)]
        procs.append(
            subprocess.Popen(
                [sys.executable, str(_RESUME), *args], env=env, stderr=subprocess.PIPE, text=True
            )
        )
    for proc in procs:
        _, err = proc.communicate(timeout=100)
        assert proc.returncode == 0, err[-4000:]
    return [
        json.loads((out / f"{kind}-{phase}-{world}-{r}.json").read_text()) for r in range(world)
    ]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["parquet", "wds", "litdata"])
def test_a_state_dict_from_two_ranks_resumes_on_one_as_mds_does(tmp_path: Path, kind: str) -> None:
    """Stopped after 24 samples per rank at world size 2 and resumed at world size 1: the
    in-place run resumes exactly where the MDS run with the same shard sizes resumes, and
    the two parts together see every row."""
    sizes = _write_source(kind, tmp_path / "src")
    write_mds_like(str(tmp_path / "mds"), sizes)
    seen = {}
    for name, source, local in (
        (kind, str(tmp_path / "src"), str(tmp_path / "c")),
        ("mds", str(tmp_path / "mds"), ""),
    ):
        first = _run_phase(2, name, source, local, tmp_path, "first", 24)
        rest = _run_phase(1, name, source, local, tmp_path, "rest", 0)
        seen[name] = (first, rest)
    assert seen[kind] == seen["mds"]
    first, rest = seen[kind]
    assert [len(r) for r in first] == [24, 24]
    before = set().union(*map(set, first))
    assert before.isdisjoint(rest[0])  # nothing seen before the stop is seen again
    assert before | set(rest[0]) == set(range(127))
