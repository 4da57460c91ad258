"""Chaos: a 2-rank x 2-worker job streams from S3 through a faulty network while its processes
are killed with SIGKILL at random moments, and restarts from its last checkpoint each time.

The dataset lives in moto's S3 server on 127.0.0.1, reached through the fault proxy (dropped
connections, 503s, truncated, short and stalled bodies). Every rank records its batches and a
state dict after every step, as a trainer checkpointing each step would; the test kills a
random rank or DataLoader worker once a random step is reached (the launcher then tears the
job down as torchrun does, so nothing cleans up), takes the last step every rank finished as
the checkpoint, and restarts the job from it on the same cache directory. In the end:

- each round's batches are what mosaicml-streaming yields resuming from that checkpoint, and
  across the rounds every sample of the epoch was delivered exactly once, with its bytes;
- the cache holds no temporary or half-written file: every file there is the index or a shard
  file of the size and digest the index gives, and the ledger has no download in flight, no
  pin, and counts exactly the shards on disk;
- the run-state directories of the dead jobs were collected.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import remote_data
from dist_harness import Job, JobResult, make_spec, runs_left
from dist_oracle import flat, rank_batches
from s3_fault_proxy import FaultConfig, FaultProxy

from streamx import _core

_TESTS = Path(__file__).resolve().parents[1]
pytest.importorskip("torch")
pytestmark = [pytest.mark.remote, pytest.mark.dist]
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto: no line per request

N = 320  # a multiple of ranks x workers x batch: no padding, so "exactly once" is literal
ORDER = {"batch_size": 4, "shuffle": True, "shuffle_block_size": 64, "num_canonical_nodes": 1}
RANKS, WORKERS = 2, 2
JOB_TIMEOUT_S = 120
AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture(scope="module")
def bucket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """(moto's address, the dataset's s3:// URL, a local copy of it for the oracle)."""
    import boto3
    from moto.server import ThreadedMotoServer

    source = tmp_path_factory.mktemp("chaos") / "source"
    remote_data.write(str(source), N, size_limit=5_000)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"{host}:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=f"http://{endpoint}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket="chaos")
    for path in source.iterdir():
        client.upload_file(str(path), "chaos", f"data/{path.name}")
    try:
        yield endpoint, "s3://chaos/data", source
    finally:
        server.stop()


@pytest.fixture
def proxy(bucket: tuple[str, str, Path]) -> Iterator[FaultProxy]:
    host, port = bucket[0].split(":")
    config = FaultConfig(
        probability=0.3,
        kinds=("drop", "503", "truncate", "short"),
        max_per_key=1,
        seed=7,
        stall_s=6.0,  # past download_timeout: the attempt is abandoned and retried
    )
    server = FaultProxy((host, int(port)), config).start()
    try:
        yield server
    finally:
        server.stop()


def _oracle(source: Path, sample_in_epoch: int) -> list[list[list[int]]]:
    """Every rank's batches from ``sample_in_epoch`` to the end of epoch 0."""
    resumed = {"sample_in_epoch": sample_in_epoch, "initial_physical_nodes": 1}
    return rank_batches(
        str(source), ORDER, nodes=1, ranks_per_node=RANKS, workers=WORKERS, epoch=0,
        **(resumed if sample_in_epoch else {}),
    )  # fmt: skip


def _progress(out: Path, rank: int) -> dict[str, Any] | None:
    path = out / f"rank{rank}.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return data


def _steps(data: dict[str, Any] | None) -> int:
    if not data or not data["passes"]:
        return 0
    return len(data["passes"][0]["batches"])


def _children(pid: int) -> list[int]:
    """A rank's child processes (its DataLoader workers), from ``/proc/*/stat``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            # Fields after the command (which may hold spaces): state, then the parent's pid.
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _kill_at(job: Job, rng: random.Random, step: int) -> str | None:
    """Once some rank reaches ``step``, SIGKILLs a random rank or worker after a random
    pause (so a kill lands anywhere: mid-download, mid-decode, mid-collective). Returns what
    was killed, or None if the job ended first."""
    out = Path(job.spec["out"])
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline and job.proc.poll() is None:
        progress = [_progress(out, r) for r in range(RANKS)]
        if max(map(_steps, progress)) >= step:
            time.sleep(rng.uniform(0.0, 0.3))
            rank = rng.randrange(RANKS)
            data = progress[rank]
            assert data is not None
            victims = [("rank", data["pid"])] + [("worker", p) for p in _children(data["pid"])]
            kind, pid = rng.choice(victims)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                return None
            return f"{kind} of rank {rank} (pid {pid}) after step {step}"
        time.sleep(0.02)
    return None


def _round(tmp_path: Path, round_no: int, job: dict[str, Any], state: dict[str, Any] | None) -> Job:
    extra: dict[str, Any] = {}
    if state is not None:
        path = tmp_path / f"state{round_no}.json"
        path.write_text(json.dumps(state))
        extra["load_state"] = str(path)
    spec = make_spec(tmp_path / f"round{round_no}", **job, **extra)
    return Job(spec)


def _checkpoint(result: JobResult) -> tuple[int, dict[str, Any] | None]:
    """The last step every rank finished, and the (shared) state dict after it."""
    done = min(_steps(result.ranks.get(r)) for r in range(RANKS))
    if done == 0:
        return 0, None
    states = [result.ranks[r]["passes"][0]["states"][done - 1] for r in range(RANKS)]
    assert all(s == states[0] for s in states), states
    return done, states[0]


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def _assert_cache_clean(local: Path) -> None:
    """Only whole files the index names, and a ledger that agrees with the disk."""
    index = json.loads((local / "index.json").read_text())
    expected: dict[str, dict[str, Any]] = {}
    for shard in index["shards"]:
        for key in ("raw_data", "zip_data"):
            if shard.get(key):
                expected[shard[key]["basename"]] = shard[key]
    for path in local.rglob("*"):
        rel = path.relative_to(local)
        if rel.parts[0] == ".streamx" or path.is_dir() or rel.name == "index.json":
            continue
        assert str(rel) in expected, f"unexpected file left in the cache: {rel}"
        info = expected[str(rel)]
        assert path.stat().st_size == info["bytes"], f"{rel} is half-written"
        assert _sha1(path) == info["hashes"]["sha1"], f"{rel} has wrong bytes"
    (ledger,) = (p for p in (local / ".streamx").glob("ledger-*") if p.suffix != ".lock")
    snap = _core.ledger_snapshot(str(ledger))
    assert snap["pins"] == [], snap["pins"]
    on_disk = 0
    for shard_id, (shard, entry) in enumerate(zip(index["shards"], snap["shards"])):
        assert entry["state"] != "preparing", f"shard {shard_id} left mid-download"
        names = [shard[k]["basename"] for k in ("raw_data", "zip_data") if shard.get(k)]
        present = sum((local / n).stat().st_size for n in names if (local / n).exists())
        assert entry["state"] == ("local" if present else "remote"), (shard_id, entry, present)
        on_disk += present
    assert snap["usage"] == on_disk
    assert list((local / ".streamx" / "owners").iterdir()) == []  # no dead owner's lock file


def _chaos(
    tmp_path: Path,
    bucket: tuple[str, str, Path],
    proxy: FaultProxy,
    *,
    kills: int,
    seed: int,
    route: str = "direct",
    stalls: bool = False,
) -> None:
    _, remote, source = bucket
    if stalls:  # each costs a whole download_timeout: only in the long runs
        proxy.config.kinds += ("stall",)
    rng = random.Random(seed)
    local = tmp_path / "cache"
    env = {
        **AWS,
        "S3_ENDPOINT_URL": proxy.url,
        "STREAMX_S3_DIRECT": "1" if route == "direct" else "0",
        "TORCHELASTIC_RUN_ID": f"chaos-{seed}",
    }
    dataset = {
        **ORDER,
        "remote": remote,
        "download_retry": 6,
        "download_timeout": 3,
        "validate_hash": "xxh64",
    }
    job = {
        "nodes": 1,
        "ranks_per_node": RANKS,
        "locals": [str(local)],
        "dataset": dataset,
        "loader": {"num_workers": WORKERS, "multiprocessing_context": "fork"},
        "sync": True,
        "env": env,
        "passes": [{"state_every": 1, "step_s": 0.1}],
        "check_samples": str(_TESTS / "remote"),
        "collective_timeout": 30,
        "timeout": JOB_TIMEOUT_S,
    }
    delivered: list[list[list[int]]] = [[] for _ in range(RANKS)]
    state: dict[str, Any] | None = None
    killed: list[str] = []
    for round_no in range(kills + 1):
        expected = _oracle(source, state["sample_in_epoch"] if state else 0)
        running = _round(tmp_path, round_no, job, state)
        what = None
        if round_no < kills:
            shortest = min(map(len, expected))
            what = _kill_at(running, rng, rng.randint(1, max(shortest // 2, 1)))
        result = running.wait()
        assert not result.timed_out, result.describe()
        if what is None:  # no kill (or the job ended first): it must have run to the end
            assert result.ok, result.describe()
            assert result.batches(0) == expected
            for rank in range(RANKS):
                delivered[rank] += expected[rank]
            break
        killed.append(what)
        assert not result.ok, f"{what}: the job should have died\n{result.describe()}"
        done, checkpoint = _checkpoint(result)
        for rank in range(RANKS):
            head = result.ranks[rank]["passes"][0]["batches"][:done]
            assert head == expected[rank][:done], f"round {round_no}, rank {rank}"
            delivered[rank] += head
        if checkpoint is not None:
            state = checkpoint
    else:
        pytest.fail(f"the last round was killed too: {killed}")
    assert killed, "no process was killed: the job ran out before the chosen step"
    counts = flat(delivered)
    assert sorted(counts) == list(range(N)), f"missing: {set(range(N)) - set(counts)}"
    assert set(counts.values()) == {1}, [i for i, c in counts.items() if c > 1]
    assert counts == flat(_oracle(source, 0))
    assert proxy.faults_injected() > 0
    _assert_cache_clean(local)
    assert runs_left([str(local)]) == []


@pytest.mark.timeout(240)
def test_a_killed_job_restarts_and_delivers_each_sample_once(
    tmp_path: Path, bucket: tuple[str, str, Path], proxy: FaultProxy
) -> None:
    """The default-selection variant: one kill, one restart."""
    _chaos(tmp_path, bucket, proxy, kills=1, seed=1)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("route", ["direct", "s3fs"])
@pytest.mark.parametrize("seed", [2, 3])
def test_chaos_many_kills(
    tmp_path: Path, bucket: tuple[str, str, Path], proxy: FaultProxy, seed: int, route: str
) -> None:
    """Four kills at random moments, then a run to the end of the epoch."""
    _chaos(tmp_path, bucket, proxy, kills=4, seed=seed, route=route, stalls=True)
