"""Test-side helpers: write a job spec, run ``dist_launch.py`` with a time limit, read results."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict

from streamx.runtime.run_dirs import runs_base

LAUNCHER = Path(__file__).resolve().with_name("dist_launch.py")
NUM_SAMPLES = 1003  # samples of the test dataset; odd on purpose, so partitions need padding


class DatasetArgs(TypedDict):
    """The ``StreamingDataset`` keywords of ``DS``."""

    batch_size: int
    shuffle: bool
    shuffle_block_size: int
    num_canonical_nodes: int


class LoaderArgs(TypedDict):
    """The DataLoader keywords of ``LOADER``."""

    num_workers: int
    multiprocessing_context: Literal["fork", "spawn", "forkserver"]


# The dataset settings and DataLoader most tests use (small blocks: shards interleave).
DS: DatasetArgs = {
    "batch_size": 4,
    "shuffle": True,
    "shuffle_block_size": 256,
    "num_canonical_nodes": 1,
}
LOADER: LoaderArgs = {"num_workers": 2, "multiprocessing_context": "fork"}
_WORLD_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class JobResult:
    """One job's outcome: each rank's record, exit codes, and the launcher's stderr."""

    ranks: dict[int, dict[str, Any]]
    exitcodes: dict[int, int | None]
    timed_out: bool
    stderr: str
    returncode: int
    spec: dict[str, Any] = field(repr=False)

    @property
    def ok(self) -> bool:
        """Every rank exited 0 within the time limit."""
        return self.returncode == 0 and not self.timed_out

    def batches(self, pass_no: int) -> list[list[list[int]]]:
        """Per rank (in rank order), the batches of ids seen in pass ``pass_no``."""
        return [self.ranks[r]["passes"][pass_no]["batches"] for r in sorted(self.ranks)]

    def describe(self) -> str:
        """Text for assertion messages."""
        return f"exit codes {self.exitcodes}, timed out {self.timed_out}\n{self.stderr[-6000:]}"


def make_spec(out: Path, **spec: Any) -> dict[str, Any]:
    """A job spec with defaults: fresh ports, one pass, a 120 s bound on everything."""
    port = free_port()
    spec.setdefault("master_port", port)
    spec.setdefault("gloo_port", port)
    spec.setdefault("timeout", 120)
    spec.setdefault("passes", [{}])
    spec["out"] = str(out)
    return spec


class Job:
    """A launcher process started in the background (for concurrent jobs)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        out = Path(spec["out"])
        out.mkdir(parents=True, exist_ok=True)
        spec_path = out / "spec.json"
        spec_path.write_text(json.dumps(spec))
        env = {k: v for k, v in os.environ.items() if k not in _WORLD_VARS}
        self._stderr = (out / "stderr.txt").open("w+")
        self.proc = subprocess.Popen(
            [sys.executable, str(LAUNCHER), str(spec_path)],
            stdout=self._stderr,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def wait(self) -> JobResult:
        """Waits (bounded by the spec's timeout plus a margin) and collects the results."""
        try:
            self.proc.wait(self.spec["timeout"] + 30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # ranks die with it (PDEATHSIG)
            self.proc.wait(10)
        self._stderr.seek(0)
        stderr = self._stderr.read()
        self._stderr.close()
        out = Path(self.spec["out"])
        ranks = {}
        for path in out.glob("rank*.json"):
            data = json.loads(path.read_text())
            ranks[int(data["rank"])] = data
        launcher = out / "launcher.json"
        info = json.loads(launcher.read_text()) if launcher.exists() else {}
        codes = {int(k): v for k, v in info.get("exitcodes", {}).items()}
        return JobResult(
            ranks, codes, info.get("timed_out", True), stderr, self.proc.returncode, self.spec
        )


def runs_left(locals_: list[str]) -> list[str]:
    """The state directories still present for datasets over each cache directory."""
    left = []
    for local in locals_:
        runs = Path(runs_base([local]))
        left += [str(p) for p in runs.iterdir()]
    return left


def state_file(path: Path, state: dict[str, Any]) -> str:
    """Saves a checkpoint state to ``path``, for a job's ``load_state``."""
    path.write_text(json.dumps(state))
    return str(path)


def run_job(out: Path, **spec: Any) -> JobResult:
    """Runs one job to completion."""
    return Job(make_spec(out, **spec)).wait()
