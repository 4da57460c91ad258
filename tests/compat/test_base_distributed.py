"""``streamx.base.distributed`` against mosaicml-streaming's, and in a real two-rank job."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from typing import Any

import pytest

pytest.importorskip("streaming")
import streaming.base.distributed as theirs

import streamx.base.distributed as ours

pytestmark = pytest.mark.compat

ENVS = [
    {},
    {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4"},
    {"RANK": "0", "WORLD_SIZE": "1"},
]


@pytest.mark.parametrize("env", ENVS)
def test_environment_getters_match(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for getter in ("get_rank", "get_world_size", "get_local_rank", "get_local_world_size"):
        assert getattr(ours, getter)() == getattr(theirs, getter)(), getter


def test_bad_environment_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "eight")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        ours.get_world_size()


def test_single_process_collectives() -> None:
    torch = pytest.importorskip("torch")
    tensor = torch.arange(3)
    ours.barrier()
    ours.broadcast(tensor, 0)
    gathered = [torch.zeros(3, dtype=tensor.dtype)]
    ours.all_gather(gathered, tensor)
    assert tensor.tolist() == [0, 1, 2]
    assert ours.all_gather_object({"a": 1}) == theirs.all_gather_object({"a": 1}) == [{"a": 1}]
    assert ours.maybe_init_dist() is False


def test_all_gather_object_without_a_group_in_a_multi_rank_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    for lib in (ours, theirs):
        with pytest.raises(RuntimeError, match="world_size|WORLD_SIZE"):
            lib.all_gather_object(1)


_RANK_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    import torch.distributed as dist
    import streamx.base.distributed as d

    started = d.maybe_init_dist()
    rank = d.get_rank()
    objects = d.all_gather_object({"rank": rank})
    tensor = torch.tensor([rank * 10 + 1])
    d.broadcast(tensor, 1)
    parts = [torch.zeros(1, dtype=torch.int64) for _ in range(d.get_world_size())]
    d.all_gather(parts, torch.tensor([rank + 5]))
    d.barrier()
    print(json.dumps({"started": started, "objects": objects, "broadcast": tensor.item(),
                      "gathered": [int(p.item()) for p in parts]}))
    dist.destroy_process_group()
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.dist
def test_two_rank_job_over_gloo() -> None:
    pytest.importorskip("torch")
    port = _free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ)
        env.update(
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE="2",
            LOCAL_WORLD_SIZE="2",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", _RANK_SCRIPT],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results: list[dict[str, Any]] = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    for result in results:
        assert result["started"] is True
        assert result["objects"] == [{"rank": 0}, {"rank": 1}]
        assert result["broadcast"] == 11
        assert result["gathered"] == [5, 6]
