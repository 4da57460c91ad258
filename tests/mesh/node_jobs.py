"""Mesh jobs on simulated nodes reading one MDS dataset from nginx.

Each node has its own cache directory and reads the dataset through its own URL prefix
(``/n<node>``, a symlink to the same directory), so nginx's access log says which node
fetched what. Every rank is a real process (``stage_rank.py``) with torchrun's variables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, cast

from nginx_server import LogEntry, Nginx

import streamx

RANK_SCRIPT = Path(__file__).with_name("stage_rank.py")
# Whole-shard GETs only: no hedged duplicate and no ranged read of a shard in flight, so
# the bytes a node fetched are exactly its shards' sizes.
_EXACT_FETCHES = {"STREAMX_HEDGE": "0", "STREAMX_RANGE_READS": "0"}


def write_mds(out: Path, num_samples: int) -> Path:
    """An MDS dataset of ``id`` ints, in shards of about ten samples."""
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=300) as writer:
        for i in range(num_samples):
            writer.write({"id": i})
    return out


class Seen(TypedDict):
    """What one rank wrote (``stage_rank.py``)."""

    epoch0: list[int]
    epoch1: list[int]
    rest: list[int]  # epoch 1 after resuming at RESUME_AT
    state: dict[str, int | None]  # taken RESUME_AT samples into epoch 1
    after: dict[str, int | None]  # taken after ``rest``


@dataclass(frozen=True)
class Job:
    """What a finished job's ranks saw and what each node fetched."""

    ranks: list[Seen]
    cached: dict[int, set[str]]  # per node: the files in its cache directory
    sent: dict[int, dict[str, int]]  # per node: file name -> body bytes of its GETs
    gets: dict[int, dict[str, int]]  # per node: file name -> GETs


def run_job(
    tmp: Path,
    mds: Path,
    nodes: int,
    ranks_per_node: int,
    mesh: dict[str, int | bool],
    dataset: dict[str, int | bool],
) -> Job:
    """Runs ``nodes * ranks_per_node`` ranks of ``stage_rank.py`` to the end."""
    root = tmp / "root"
    root.mkdir()
    for node in range(nodes):
        (root / f"n{node}").symlink_to(mds)
    with Nginx(root) as server:
        procs = [
            _start(tmp, server.endpoint, nodes, ranks_per_node, rank, mesh, dataset)
            for rank in range(nodes * ranks_per_node)
        ]
        errors = [proc.communicate(timeout=300)[1].decode() for proc in procs]
        assert all(proc.returncode == 0 for proc in procs), errors
        cached = {n: _files(tmp / f"node{n}") for n in range(nodes)}
        # nginx logs a request once answered: wait for a line for each file a node holds.
        wanted = {f"/n{n}/{name}" for n, names in cached.items() for name in names}
        log = server.log_when(lambda entries: wanted <= {e.uri for e in entries})
    ranks = [cast(Seen, json.loads((tmp / f"rank{r}.json").read_text())) for r in range(len(procs))]
    return Job(ranks, cached, *_per_node(log, nodes))


def _start(
    tmp: Path,
    endpoint: str,
    nodes: int,
    ranks_per_node: int,
    rank: int,
    mesh: dict[str, int | bool],
    dataset: dict[str, int | bool],
) -> subprocess.Popen[bytes]:
    node = rank // ranks_per_node
    env = {
        **os.environ,
        **_EXACT_FETCHES,
        "RANK": str(rank),
        "LOCAL_RANK": str(rank % ranks_per_node),
        "WORLD_SIZE": str(nodes * ranks_per_node),
        "LOCAL_WORLD_SIZE": str(ranks_per_node),
    }
    local, remote = tmp / f"node{node}", f"{endpoint}/n{node}"
    args = [str(local), remote, str(tmp), json.dumps(mesh), json.dumps(dataset)]
    return subprocess.Popen(
        [sys.executable, str(RANK_SCRIPT), *args], env=env, stderr=subprocess.PIPE
    )


def _files(local: Path) -> set[str]:
    """The data files a node's cache holds (not its bookkeeping under ``.streamx``)."""
    return {path.name for path in local.iterdir() if path.is_file()}


def _per_node(
    log: list[LogEntry], nodes: int
) -> tuple[dict[int, dict[str, int]], dict[int, dict[str, int]]]:
    sent: dict[int, dict[str, int]] = {node: {} for node in range(nodes)}
    count: dict[int, dict[str, int]] = {node: {} for node in range(nodes)}
    for entry in log:
        if entry.method != "GET":
            continue
        prefix, name = entry.uri.strip("/").split("/", 1)
        node = int(prefix.removeprefix("n"))
        sent[node][name] = sent[node].get(name, 0) + entry.sent
        count[node][name] = count[node].get(name, 0) + 1
    return sent, count
