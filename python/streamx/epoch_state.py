"""Epoch counter and resumption state, shared by a rank's process and its DataLoader workers.

mosaicml-streaming keeps these in POSIX shared memory and makes every worker on the node
meet at a barrier to agree on the epoch; a crash leaves the names behind and uneven
workers hang. Here each (rank, worker) keeps its own epoch counter in a small file that it
alone writes, so nobody waits for anybody, and every file is replaced atomically, so a
``kill -9`` leaves nothing half-written. The files live in the cache directory under a
per-job name; directories of jobs whose owner process is dead are removed on start-up.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
import warnings
from typing import Any

from streamx.world import World

__all__ = ["STATE_KEYS", "EpochState"]

STATE_KEYS = (
    "epoch",
    "sample_in_epoch",
    "num_canonical_nodes",
    "shuffle_seed",
    "initial_physical_nodes",
)
_STALE_AFTER_S = 60.0


def _job_key() -> str:
    """Ranks of one torchrun job agree on this; independent jobs differ."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        parts = [
            os.environ.get(k, "") for k in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT")
        ]
        return "job-" + "-".join(p.replace("/", "_") for p in parts)
    return f"proc-{os.getpid()}-{secrets.token_hex(4)}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp.{os.getpid()}.{secrets.token_hex(3)}"
    with open(tmp, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(tmp, path)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        return None


class EpochState:
    """The per-job state directory and the epoch/resume logic built on it."""

    def __init__(self, root: str, dataset: Any) -> None:
        self.root = root
        self._dataset = dataset
        os.makedirs(root, exist_ok=True)
        owner = os.path.join(root, "owner")
        if _read(owner) is None:
            _write_atomic(owner, str(os.getpid()))

    @classmethod
    def for_dataset(cls, dataset: Any) -> EpochState:
        """Creates (or joins) the state directory of this job under the first local dir."""
        base = os.path.join(dataset._local_dirs()[0], ".streamx", "runs")
        _remove_dead_runs(base)
        root = os.path.join(base, _job_key())
        owner = _read(os.path.join(root, "owner"))
        if owner and owner.isdigit() and not _pid_alive(int(owner)):
            # A job of the same name crashed here (kill -9): its counters are not ours.
            shutil.rmtree(root, ignore_errors=True)
        return cls(root, dataset)

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "_dataset": self._dataset}

    def close(self) -> None:
        """Removes the job directory if this process created it."""
        try:
            if _read(os.path.join(self.root, "owner")) == str(os.getpid()):
                shutil.rmtree(self.root, ignore_errors=True)
        except Exception:
            pass

    def _counter_path(self, world: World) -> str:
        return os.path.join(self.root, f"epoch.{world.rank}.{world.worker_of_rank}")

    def _counter(self, world: World) -> int:
        text = _read(self._counter_path(world))
        return int(text) if text else 0

    @property
    def next_epoch(self) -> int:
        """The next epoch of this rank: the furthest any of its workers has started."""
        rank = World.detect().rank
        best = 0
        for name in os.listdir(self.root):
            parts = name.split(".")
            if len(parts) == 3 and parts[0] == "epoch" and parts[1] == str(rank):
                best = max(best, int(_read(os.path.join(self.root, name)) or 0))
        return best

    @next_epoch.setter
    def next_epoch(self, epoch: int) -> None:
        world = World.detect()
        for name in os.listdir(self.root):
            if name.startswith(f"epoch.{world.rank}."):
                _write_atomic(os.path.join(self.root, name), str(epoch))
        _write_atomic(self._counter_path(world), str(epoch))

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Records a resumption state for the next ``__iter__`` of every worker."""
        missing = [k for k in STATE_KEYS[:4] if k not in obj]
        if missing:
            raise ValueError(f"State dict is missing keys {missing}: {obj}")
        _write_atomic(os.path.join(self.root, "resume.json"), json.dumps(obj, sort_keys=True))
        try:
            os.remove(os.path.join(self.root, "resume.used"))
        except FileNotFoundError:
            pass

    def loaded_state(self) -> dict[str, Any] | None:
        """The last state given to ``load_state_dict``, if any."""
        text = _read(os.path.join(self.root, "resume.json"))
        return json.loads(text) if text else None

    def start_epoch(self, world: World) -> tuple[int, int]:
        """Called by each worker at ``__iter__``: returns (epoch, sample_in_epoch) and advances."""
        presumed = self._counter(world)
        state = self.loaded_state()
        epoch, offset = self.resolve(presumed, warn=True)
        if state is not None and state["epoch"] >= presumed:
            _write_atomic(os.path.join(self.root, "resume.used"), "applied")
        _write_atomic(self._counter_path(world), str(epoch + 1))
        return epoch, offset

    def resolve(self, presumed: int, warn: bool = False) -> tuple[int, int]:
        """Applies a loaded state unless it is stale; a stale state is reported, not ignored."""
        state = self.loaded_state()
        ds = self._dataset
        if state is None or state["epoch"] < presumed:
            used = os.path.exists(os.path.join(self.root, "resume.used"))
            if warn and state is not None and not used:
                _write_atomic(os.path.join(self.root, "resume.used"), "stale")
                warnings.warn(
                    f"Ignoring the loaded state dict (epoch {state['epoch']}) because epoch "
                    f"{presumed} has already started in this run; call load_state_dict before "
                    "iterating to resume.",
                    UserWarning,
                    stacklevel=3,
                )
            ds._resolve_defaults(None)
            return presumed, 0
        ds._resolve_defaults(state)
        return int(state["epoch"]), int(state["sample_in_epoch"])

    def state_dict(self, num_samples: int, from_beginning: bool) -> dict[str, Any]:
        """The five-key state after ``num_samples`` samples of the current epoch."""
        ds = self._dataset
        epoch, offset = self.resolve(self.next_epoch - 1)
        world = ds._parallel_rank_world
        initial = ds.initial_physical_nodes
        return {
            "epoch": epoch,
            "sample_in_epoch": num_samples if from_beginning else offset + num_samples,
            "num_canonical_nodes": ds.num_canonical_nodes,
            "shuffle_seed": ds.shuffle_seed,
            "initial_physical_nodes": world.num_nodes if initial is None else initial,
        }


def _remove_dead_runs(base: str) -> None:
    """Deletes job directories whose owner died (after a crash) and that are not fresh."""
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return
    now = time.time()
    for name in names:
        path = os.path.join(base, name)
        owner = _read(os.path.join(path, "owner"))
        try:
            age = now - os.stat(path).st_mtime
        except FileNotFoundError:
            continue
        if owner and owner.isdigit() and not _pid_alive(int(owner)) and age > _STALE_AFTER_S:
            shutil.rmtree(path, ignore_errors=True)
