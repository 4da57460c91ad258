"""Epoch counter and resumption state, shared by one dataset instance and its DataLoader workers.

mosaicml-streaming keeps these in POSIX shared memory named by a node-wide prefix and makes
every worker of every rank on the node meet at a barrier to agree on the epoch. A crash
leaves the names behind (``FileExistsError: /000000_locals``), uneven workers hang, and two
jobs cannot share a cache directory.

Nothing here is shared beyond what needs to be: the epoch plan is closed-form, so a rank
needs nobody else's state. Each dataset instance owns a small private directory (see
``streamx.runtime.run_dirs`` for where it lives, outside the user's data, and how the directories of
crashed runs are collected) that its DataLoader workers find through the pickled (or forked)
dataset:

* ``epoch.<W>.<w>``: the next epoch of worker ``w`` of a DataLoader with ``W`` workers
  (``epoch.1.0`` for iteration outside workers). Only that worker writes it.
* ``pass.<token>.<seed>.<k>``: the ``(epoch, sample_in_epoch)`` of one
  ``StreamingDataLoader`` pass (the ``k``-th pass of persistent workers started with
  ``token`` and the DataLoader iterator's base ``seed``). The first worker
  to start the pass writes it, the others adopt it, so workers that started late, or never
  started the previous pass, still agree, as mosaicml-streaming's node barrier makes them.
* ``resume.json``: the state given to ``load_state_dict``; ``resume.used`` notes that it was
  applied or reported stale.

The state holds no reference to its dataset: the settings an epoch runs with go in as an
``EpochSettings`` and come back resolved in an :class:`EpochStart`, which the caller keeps.

Every file is replaced atomically (write, then rename), so ``kill -9`` leaves nothing
half-written, and a crashed run needs no manual cleanup: a new run never waits for or
collides with an old one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import warnings
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from streamx.order.resume_marks import check_marks, marks_of
from streamx.order.settings import EpochSettings, ResumeState
from streamx.runtime import run_dirs
from streamx.runtime.atomic_write import temp_beside, write_atomic
from streamx.runtime.worker_info import get_worker_info

__all__ = ["STATE_KEYS", "EpochStart", "EpochState"]

STATE_KEYS = (
    "epoch",
    "sample_in_epoch",
    "num_canonical_nodes",
    "shuffle_seed",
    "initial_physical_nodes",
)
# Pass files kept per instance; older ones are pruned.
_PASSES_KEPT = 16


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        return None


def _create_exclusive(path: str, text: str) -> bool:
    """Writes ``path`` complete or not at all, unless it exists: ``False`` then."""
    tmp = temp_beside(path)  # a ".tmp." name, which the pass listing skips
    with open(tmp, "w", encoding="utf-8") as file:
        file.write(text)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.remove(tmp)
    return True


class EpochState:
    """One dataset instance's state directory and the epoch/resume logic built on it."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._pass_token: str | None = None
        self._pass_count: dict[str, int] = {}

    @classmethod
    def create(cls, local_dirs: Sequence[str]) -> EpochState:
        """Creates a state directory for a dataset over ``local_dirs`` (and clears those of
        dead instances)."""
        base = run_dirs.runs_base(local_dirs)
        run_dirs.collect_dead(base)
        root, fd = run_dirs.create_locked(base)
        state = cls(root)
        state._finalizer = weakref.finalize(state, run_dirs.release, root, fd, os.getpid())
        return state

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "_pass_token": self._pass_token}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A DataLoader worker's copy: it never removes the directory.
        self.__dict__.update(state)
        self._finalizer = None
        self._pass_count = {}

    def close(self) -> None:
        """Removes the state directory (in the creating process only)."""
        if self._finalizer is not None:
            self._finalizer()

    # Epoch counters.

    def _counters(self) -> dict[tuple[int, int], int]:
        out: dict[tuple[int, int], int] = {}
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return out
        for name in names:
            parts = name.split(".")
            if (
                len(parts) == 3
                and parts[0] == "epoch"
                and parts[1].isdigit()
                and parts[2].isdigit()
            ):
                text = _read(os.path.join(self.root, name))
                if text:
                    out[(int(parts[1]), int(parts[2]))] = int(text)
        return out

    def _counter_path(self, group: tuple[int, int]) -> str:
        return os.path.join(self.root, f"epoch.{group[0]}.{group[1]}")

    def _presumed(self, group: tuple[int, int]) -> int:
        """The epoch this worker's next ``__iter__`` starts.

        Its own counter, unless iteration with another worker count (or in the main process)
        has gone further since: then it catches up, as mosaicml-streaming's shared counter
        would. Workers of the same DataLoader never see each other's increments, so they all
        start the same epoch without waiting for each other.
        """
        counters = self._counters()
        own = counters.pop(group, 0)
        others = [v for (workers, _), v in counters.items() if workers != group[0]]
        return max([own, *others])

    @property
    def next_epoch(self) -> int:
        """The next epoch of this instance: the furthest any of its iterators has started."""
        return max(self._counters().values(), default=0)

    @next_epoch.setter
    def next_epoch(self, epoch: int) -> None:
        for group in self._counters():
            write_atomic(self._counter_path(group), str(int(epoch)))
        write_atomic(self._counter_path((1, 0)), str(int(epoch)))

    # Resumption.

    def load_state_dict(self, obj: Mapping[str, object]) -> None:
        """Records a resumption state for the next ``__iter__`` of every worker.

        Raises:
            ValueError: If ``obj`` lacks one of the four required keys.
        """
        missing = [k for k in STATE_KEYS[:4] if k not in obj]
        if missing:
            raise ValueError(f"State dict is missing keys {missing}: {dict(obj)}")
        check_marks(obj)
        write_atomic(os.path.join(self.root, "resume.json"), json.dumps(obj, sort_keys=True))
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(self.root, "resume.used"))

    def loaded_state(self) -> ResumeState | None:
        """The last state given to ``load_state_dict``, if any."""
        text = _read(os.path.join(self.root, "resume.json"))
        # Checked for the required keys when it was stored.
        return cast(ResumeState, json.loads(text)) if text else None

    def begin_pass(self) -> None:
        """Marks the start of a DataLoader pass (in the process that owns the DataLoader)."""
        self._pass_token = secrets.token_hex(8)

    def start_epoch(self, settings: EpochSettings, num_nodes: int) -> EpochStart:
        """Called by each worker at ``__iter__``: returns the epoch to run and advances.

        Args:
            settings: The settings in force so far (resolved again here).
            num_nodes: Physical nodes of the (replicated) world.
        """
        info = get_worker_info()
        group = (info.num_workers, info.id) if info is not None else (1, 0)
        if info is None or self._pass_token is None:
            # Iterating the dataset directly (nobody to agree with), or a plain DataLoader.
            start = self._claim(self._presumed(group), settings, num_nodes)
        else:
            # The workers of one DataLoader iterator share its base seed; with the token it
            # names the pass even when a later plain DataLoader inherits a stale token.
            key = f"{self._pass_token}.{int(info.seed) - int(info.id)}"
            k = self._pass_count.get(key, 0)
            self._pass_count[key] = k + 1
            path = os.path.join(self.root, f"pass.{key}.{k}")
            text = _read(path)
            if text is None:
                start = self._claim(self.next_epoch, settings, num_nodes)
                if _create_exclusive(path, f"{start.epoch} {start.sample_in_epoch}"):
                    self._prune_passes()
                else:
                    text = _read(path)
            if text is not None:  # a sibling started this pass first: same epoch, same offset
                epoch, offset = (int(v) for v in text.split())
                resolved = self.resolve(epoch, settings, num_nodes).settings
                marks = marks_of(self.loaded_state(), epoch, offset)
                start = EpochStart(epoch, offset, resolved, marks)
        write_atomic(self._counter_path(group), str(start.epoch + 1))
        return start

    def _claim(self, presumed: int, settings: EpochSettings, num_nodes: int) -> EpochStart:
        state = self.loaded_state()
        start = self.resolve(presumed, settings, num_nodes, warn=True)
        if state is not None and state["epoch"] >= presumed:
            write_atomic(os.path.join(self.root, "resume.used"), "applied")
        return start

    def _prune_passes(self) -> None:
        try:
            names = [n for n in os.listdir(self.root) if n.startswith("pass.") and ".tmp." not in n]
        except FileNotFoundError:
            return
        if len(names) <= 2 * _PASSES_KEPT:
            return
        paths = [os.path.join(self.root, n) for n in names]
        with contextlib.suppress(FileNotFoundError):
            paths.sort(key=os.path.getmtime)
        for path in paths[:-_PASSES_KEPT]:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)

    def resolve(
        self, presumed: int, settings: EpochSettings, num_nodes: int, warn: bool = False
    ) -> EpochStart:
        """Applies a loaded state unless it is stale; a stale state is reported, not ignored.

        A loaded state's ``num_canonical_nodes``, ``shuffle_seed`` and
        ``initial_physical_nodes`` stay in force for the later epochs of the run (the caller
        keeps the returned settings), as they do in mosaicml-streaming's persistent workers,
        so an elastically resumed run continues with the order the original run would have had.

        Args:
            presumed: The epoch that starts unless a loaded state says otherwise.
            settings: The settings in force so far.
            num_nodes: Physical nodes of the (replicated) world.
            warn: Report a stale loaded state (once).
        """
        state = self.loaded_state()
        if state is None or state["epoch"] < presumed:
            used = os.path.exists(os.path.join(self.root, "resume.used"))
            if warn and state is not None and not used:
                write_atomic(os.path.join(self.root, "resume.used"), "stale")
                warnings.warn(
                    f"Ignoring the loaded state dict (epoch {state['epoch']}) because epoch "
                    f"{presumed} has already started in this run; call load_state_dict before "
                    "iterating to resume.",
                    UserWarning,
                    stacklevel=3,
                )
            return EpochStart(presumed, 0, settings.resolve(state, num_nodes))
        start = int(state["epoch"]), int(state["sample_in_epoch"])
        marks = marks_of(state, *start)
        return EpochStart(*start, settings.resolve(state, num_nodes), marks)


@dataclass(frozen=True)
class EpochStart:
    """Where an epoch starts and the settings it runs with."""

    epoch: int
    sample_in_epoch: int
    settings: EpochSettings
    # py1e's resume marks a loaded state dict carried for this start (``resume_marks``).
    resume_marks: bytes | None = None

    def state_dict(self, num_samples: int, from_beginning: bool, num_nodes: int) -> ResumeState:
        """The five-key state after ``num_samples`` samples of this epoch.

        Args:
            num_samples: Samples consumed (by the whole world) so far.
            from_beginning: Whether ``num_samples`` counts from the epoch's start rather than
                from ``sample_in_epoch``.
            num_nodes: Physical nodes of the (replicated) world, the default
                ``initial_physical_nodes``.
        """
        settings = self.settings
        initial = settings.initial_physical_nodes
        return {
            "epoch": self.epoch,
            "sample_in_epoch": num_samples
            if from_beginning
            else self.sample_in_epoch + num_samples,
            "num_canonical_nodes": settings.resolved_sizes()[0],
            "shuffle_seed": settings.shuffle_seed,
            "initial_physical_nodes": num_nodes if initial is None else initial,
        }
