"""The driver of a resume walk: run a job, SIGKILL it at a random point, resume it on another
world size from the last step every rank committed, and so on until the epoch ends.

A segment is one job (``walk_rank.py``) of one world shape (``nodes`` x ``ranks_per_node``),
launched in its own session so that one ``killpg(SIGKILL)`` ends the launcher, every rank and
every DataLoader worker. A kill lands at a random point: during start-up, or after a random
pause once some rank has committed a random step, sometimes after one rank (or one of its
workers) alone was killed first, as when a node fails and torchrun then tears the job down.
The driver checks that nothing of the job is left, reads every rank's committed checkpoints,
takes the last step all ranks committed (its state must be the same on every rank: mosaic's
state is global; rank 0's is saved for the next segment) and counts the samples of the steps
up to it; the samples of later steps (committed by some ranks only) are dropped, to be
delivered again by the next segment.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RANK_SCRIPT = Path(__file__).resolve().with_name("walk_rank.py")
_WORLD_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
JOB_TIMEOUT_S = 240  # a job's own bound (its launcher kills the job past it)
GONE_TIMEOUT_S = 30.0  # how long the processes of a killed job may take to vanish


def write_dataset(out: Path, num_samples: int, size_limit: int = 2_000) -> None:
    """An MDS dataset of ``{"id": i, "text": "sample-i"}``, in several shards."""
    from walk_rank import sample_text

    import streamx

    with streamx.MDSWriter(
        out=str(out), columns={"id": "int", "text": "str"}, size_limit=size_limit
    ) as writer:
        for i in range(num_samples):
            writer.write({"id": i, "text": sample_text(i)})


def node_copies(source: Path, root: Path, count: int) -> list[str]:
    """``count`` copies of the dataset, the local directory of each simulated node."""
    dirs = []
    for node in range(count):
        path = root / f"node{node}"
        if not path.exists():
            shutil.copytree(source, path)
        dirs.append(str(path))
    return dirs


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class WalkConfig:
    """One walk: the training job, the world shapes it cycles through, and its kills."""

    variant: str  # walk_rank.py's variants: dataset, dataset-relative, loader<k>[-procs|-torch]
    num_samples: int
    global_batch: int
    dataset: dict[str, Any]  # StreamingDataset keywords besides local and batch_size
    layouts: tuple[tuple[int, int], ...]  # (nodes, ranks per node), cycled: 8 -> 2 -> 8 ...
    kills: int
    seed: int
    step_s: float = 0.02  # each step's stand-in for compute
    max_span: int = 4  # a kill is triggered within this many steps of the segment's start
    startup_kills: float = 0.1  # the share of kills aimed at the job's start-up
    lone_kills: float = 0.3  # the share of kills that take one rank or worker first
    end_kill: bool = False  # the last kill lands after every rank committed the last step

    @property
    def total_steps(self) -> int:
        """Global steps in the epoch."""
        return self.num_samples // self.global_batch


@dataclass
class Segment:
    """What one job of the walk committed."""

    world: int
    start: int  # the global step it resumed after
    committed: int  # the last global step every rank committed
    steps: list[list[int]]  # ids of each global step in (start, committed], rank order
    state: dict[str, Any] | None  # rank 0's state after ``committed``
    dropped: int  # steps past ``committed`` that only some ranks committed
    partial: dict[int, list[int]]  # for each of those, the ids of the ranks that did
    kill: str  # what was killed, and when, or "" for a job that ran to its end


@dataclass
class Walk:
    """A whole walk: its segments, and its steps put end to end."""

    segments: list[Segment] = field(default_factory=list)

    @property
    def steps(self) -> list[list[int]]:
        return [ids for seg in self.segments for ids in seg.steps]

    @property
    def kills(self) -> int:
        return sum(1 for seg in self.segments if seg.kill)

    def summary(self) -> str:
        """One line: kills, and how many left no new step or a partly committed one."""
        killed = [s for s in self.segments if s.kill]
        return (
            f"{len(killed)} kills over {len(self.steps)} steps: "
            f"{sum(s.committed == s.start for s in killed)} before any step all ranks "
            f"committed, {sum(bool(s.dropped) for s in killed)} with a step some ranks "
            f"committed ({sum(s.dropped for s in killed)} such steps, delivered again), "
            f"{sum('first, then' in s.kill for s in killed)} of one process first"
        )

    def describe(self) -> str:
        return "\n".join(
            f"  world {s.world}: steps {s.start}->{s.committed} (+{s.dropped} dropped) {s.kill}"
            for s in self.segments
        )


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command (state first), or None."""
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return None


def _processes() -> list[tuple[int, list[str]]]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None:
                found.append((int(entry.name), fields))
    return found


def runs_left(locals_: list[str]) -> list[str]:
    """The streamx state directories still present for datasets over each local directory."""
    from streamx.runtime.run_dirs import runs_base

    return [str(p) for local in locals_ for p in Path(runs_base([local])).iterdir()]


def group_alive(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    return [pid for pid, f in _processes() if int(f[2]) == pgid and f[0] not in ("Z", "X")]


def children(pid: int) -> list[int]:
    """The live child processes of ``pid``."""
    return [p for p, f in _processes() if int(f[1]) == pid and f[0] not in ("Z", "X")]


class Job:
    """One segment's launcher, started in a session (and process group) of its own."""

    def __init__(self, out: Path, spec: dict[str, Any]) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.ckpt = Path(spec["ckpt"])
        self.world = spec["world"]
        path = out / "spec.json"
        path.write_text(json.dumps(spec))
        env = {k: v for k, v in os.environ.items() if k not in _WORLD_VARS}
        self._log = (out / "log.txt").open("w+")
        self.proc = subprocess.Popen(
            [sys.executable, str(RANK_SCRIPT), str(path)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def progress(self, slowest: bool = False) -> int:
        """The highest step any rank (or, with ``slowest``, every rank) has committed."""
        ends = []
        for rank in range(self.world):
            end = 0
            with contextlib.suppress(FileNotFoundError):
                for name in os.listdir(self.ckpt / f"rank{rank}"):
                    if name.startswith("step") and name.endswith(".json"):
                        end = max(end, int(name[4:-5]))
            ends.append(end)
        return min(ends) if slowest else max(ends)

    def log(self) -> str:
        self._log.seek(0)
        return self._log.read()[-8000:]

    def kill(self) -> None:
        """SIGKILLs the whole job and waits until none of its processes is left."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(GONE_TIMEOUT_S)
        deadline = time.monotonic() + GONE_TIMEOUT_S
        while left := group_alive(self.proc.pid):
            assert time.monotonic() < deadline, f"processes {left} outlived their killed job"
            time.sleep(0.05)

    def wait(self) -> int:
        """The launcher's exit code, once it ends (killed past the job's time limit)."""
        try:
            return self.proc.wait(JOB_TIMEOUT_S + 30)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"job {self.out} never ended:\n{self.log()}") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        self._log.close()


def _records(ckpt: Path, world: int) -> list[dict[int, dict[str, Any]]]:
    """Every rank's committed checkpoints by step (a half-written one has no final name)."""
    out: list[dict[int, dict[str, Any]]] = []
    for rank in range(world):
        steps: dict[int, dict[str, Any]] = {}
        directory = ckpt / f"rank{rank}"
        if directory.exists():
            for path in directory.glob("step*.json"):
                record = json.loads(path.read_text())
                steps[int(record["step"])] = record
        out.append(steps)
    return out


def _kill_at_end(job: Job, config: WalkConfig) -> str:
    """Kills the job once every rank committed the epoch's last step, before it ends."""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while job.progress(slowest=True) < config.total_steps and job.proc.poll() is None:
        assert time.monotonic() < deadline, f"the job never reached its end:\n{job.log()}"
        time.sleep(0.005)
    done = [(job.ckpt / f"rank{r}" / "done.json").exists() for r in range(job.world)]
    if job.proc.poll() is not None or any(done):
        return ""  # tail_s was too short for this machine
    job.kill()
    return "killed once every rank had committed the epoch's last step"


def _kill_at_random(job: Job, config: WalkConfig, rng: random.Random, start: int) -> str:
    """Waits for a random point of the job, then kills it. Returns what was done, or ""
    when the job ended first."""
    if rng.random() < config.startup_kills:
        # A random moment of the start-up, or soon after it: at most max_span steps in, so
        # that a fast machine does not spend the epoch before the walk's kills are done.
        pause = rng.uniform(0.0, 3.0)
        deadline = time.monotonic() + pause
        while (
            time.monotonic() < deadline
            and job.proc.poll() is None
            and job.progress() < start + config.max_span
        ):
            time.sleep(0.01)
        what = f"{pause:.2f} s after its start, or {config.max_span} steps in"
    else:
        last = config.total_steps - 2  # leave the epoch's end to the last segment
        target = min(start + rng.randint(1, config.max_span), last)
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while job.progress() < target and job.proc.poll() is None:
            assert time.monotonic() < deadline, f"no progress to step {target}:\n{job.log()}"
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 1.5 * config.step_s))
        what = f"once step {target} was committed"
    if job.proc.poll() is not None:
        return ""
    if rng.random() < config.lone_kills:
        ranks = sorted(children(job.proc.pid))
        if ranks:
            rank_pid = rng.choice(ranks)
            victims = [("rank", rank_pid)] + [("worker", p) for p in children(rank_pid)]
            kind, pid = rng.choice(victims)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            time.sleep(rng.uniform(0.0, 0.2))
            what = f"a {kind} (pid {pid}) first, then the job, {what}"
    furthest = job.progress()
    what += f" (furthest rank at step {furthest})" if furthest else " (no step committed)"
    job.kill()
    return "killed " + what


def run_segment(
    out: Path,
    config: WalkConfig,
    layout: tuple[int, int],
    locals_: list[str],
    start: int,
    state: dict[str, Any] | None,
    rng: random.Random | None,
    at_end: bool = False,
) -> Segment:
    """Runs one job from ``state`` (after global step ``start``), killed at a random point
    when ``rng`` is given (after its last step with ``at_end``), else run to the end of the
    epoch; returns what all ranks committed."""
    nodes, rpn = layout
    world = nodes * rpn
    spec: dict[str, Any] = {
        "world": world,
        "ranks_per_node": rpn,
        "locals": locals_[:nodes],
        "master_port": free_port(),
        "timeout": JOB_TIMEOUT_S,
        "global_batch": config.global_batch,
        "dataset": config.dataset,
        "variant": config.variant,
        "step_s": config.step_s if rng is not None else 0.0,
        "tail_s": 2.0 if at_end else 0.0,
        "ckpt": str(out / "ckpt"),
    }
    if state is not None:
        (out / "state.json").parent.mkdir(parents=True, exist_ok=True)
        (out / "state.json").write_text(json.dumps(state))
        spec["load_state"] = str(out / "state.json")
    job = Job(out, spec)
    try:
        if at_end:
            kill = _kill_at_end(job, config)
        else:
            kill = "" if rng is None else _kill_at_random(job, config, rng, start)
        if not kill:
            code = job.wait()
            assert code == 0, f"job of world {world} failed ({code}):\n{job.log()}"
    finally:
        job.close()
    records = _records(out / "ckpt", world)
    ends = []
    for rank, steps in enumerate(records):
        assert sorted(steps) == list(range(start + 1, start + 1 + len(steps))), (rank, steps)
        ends.append(start + len(steps))
    committed = min(ends)
    if not kill or at_end:
        assert committed == config.total_steps, (committed, job.log())
    global_steps = []
    for step in range(start + 1, committed + 1):
        global_steps.append([i for steps in records for i in steps[step]["ids"]])
    # The state after a step is global: every rank that committed the step has the same one.
    for step in range(start + 1, max(ends) + 1):
        states = [steps[step]["state"] for steps in records if step in steps]
        assert all(s == states[0] for s in states), (step, states)
        assert states[0]["epoch"] == 0, states[0]
        assert states[0]["sample_in_epoch"] == step * config.global_batch, (step, states[0])
    return Segment(
        world=world,
        start=start,
        committed=committed,
        steps=global_steps,
        state=records[0][committed]["state"] if committed > start else state,
        dropped=max(ends) - committed,
        partial={
            step: [i for steps in records if step in steps for i in steps[step]["ids"]]
            for step in range(committed + 1, max(ends) + 1)
        },
        kill=kill,
    )


def run_walk(root: Path, config: WalkConfig, locals_: list[str]) -> Walk:
    """``config.kills`` killed jobs, then one that finishes the epoch, each resuming on the
    next layout (8 -> 2 -> 8 ...) from the last step all ranks of the one before committed."""
    rng = random.Random(config.seed)
    walk = Walk()
    start, state = 0, None
    for k in range(config.kills + 1):
        layout = config.layouts[k % len(config.layouts)]
        final = k == config.kills
        at_end = config.end_kill and k == config.kills - 1
        seg = run_segment(
            root / f"seg{k:03d}",
            config,
            layout,
            locals_,
            start,
            state,
            None if final else rng,
            at_end,
        )
        walk.segments.append(seg)
        start, state = seg.committed, seg.state
        if not seg.kill:  # the job finished the epoch (before a kill, if one was due)
            break
    return walk


def uninterrupted(
    root: Path, config: WalkConfig, layout: tuple[int, int], locals_: list[str]
) -> list[list[int]]:
    """The global steps of one job that runs the whole epoch on ``layout``."""
    return run_segment(root, config, layout, locals_, 0, None, None).steps
