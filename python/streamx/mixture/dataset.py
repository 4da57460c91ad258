"""``MixedDataset``: named sources interleaved by a schedule of weights over global steps.

The run is a fixed sequence of ``num_samples`` positions; position ``p`` lies in global step
``p // global_batch_size``. What a position holds depends only on the sources' lengths, the
seed and the schedule up to its step, never on the world size or the worker count:

1. the step's count of each source comes from the schedule's weights at that step
   (:mod:`streamx.mixture.counts`: exact integers, the rounding error carried on);
2. the step's positions interleave those counts in an order drawn from ``(seed, step)``;
3. the ``c``-th sample a source contributes (over the whole run) is index ``c mod len`` of
   epoch ``c // len`` of that source's own seeded permutation
   (:mod:`streamx.order.permutation`): a source shorter than its share cycles, each
   epoch in a new order.

Consumers: rank ``r`` of ``R`` takes positions ``start + r + i * R`` (``start`` is the resume
position), in order; its DataLoader workers take that sequence in chunks of the loader's
batch size, round-robin, which is the order torch collects them in, so each rank receives
its positions in sequence. When every rank has received ``i`` items (a training step's
boundary, in lockstep), the first ``start + i * R`` positions are consumed: that number
is the state. Progress is recorded where training receives items, in the rank's process
(through :mod:`streamx.packing.tracked` when workers run ahead).

A state dict holds the position, the configuration that fixes the sequence, and a
fingerprint of the per-step counts of every step it touched. Loading checks all of them,
naming what differs; so a schedule may change from the resume step on (its counts before
are unchanged), and the resumed run then equals an uninterrupted run of the new schedule.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from streamx.mixture.counts import StepCounts
from streamx.mixture.schedule import MixtureSchedule, check_weights, unknown_streams
from streamx.mixture.segment_counts import SegmentCounts
from streamx.order.permutation import Permutation
from streamx.order.world import World
from streamx.packing.documents import Documents, document_count, end_loader_pass
from streamx.packing.provenance import Provenance, Tagged
from streamx.runtime.torch_bases import TorchIterableDataset

if TYPE_CHECKING:
    from torch.utils.data import DataLoader

__all__ = ["MixedDataset"]

_STEP_KEY = 0x6D6978  # separates the interleave's seeds from the sources' permutations


def _positive_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return int(value)


class MixedDataset(TorchIterableDataset):  # type: ignore[misc,type-arg]
    """Samples of several named sources, mixed step by step by a :class:`MixtureSchedule`.

    Map-style (``len`` and ``[]``, e.g. as the documents of a ``PackedDataset`` with
    ``shuffle=False``) and iterable (through a DataLoader, ranks and workers included).
    Read it through ``StreamingDataLoader``, or a plain ``DataLoader`` through
    :meth:`tracked_batches`: the loader's batch size then sets how its workers share the
    rank's positions, so that batch ``t`` of every rank together is global step ``t`` (with
    a per-rank batch of ``global_batch_size / world``), and the state follows what training
    received. A plain ``DataLoader`` iterated directly gives the same samples in another
    order, and records nothing.

    Args:
        sources: Name -> map-style source (``StreamingDataset``, ``LocalDataset``, any
            ``len``/``[]``); each must hold at least one sample.
        schedule: A :class:`MixtureSchedule`, or one ``{name: weight}`` for every step.
        global_batch_size: Positions per global step (all ranks together); the schedule's
            steps are these.
        num_steps: Global steps in the run (or give ``num_samples``).
        num_samples: Positions in the run (or give ``num_steps``).
        seed: Seeds the interleave within each step and every source's permutations.
        shuffle: ``False`` keeps each step's positions grouped by source (in ``sources``'
            order) and reads each source in index order.
    """

    def __init__(
        self,
        sources: Mapping[str, Documents],
        schedule: MixtureSchedule | Mapping[str, float],
        *,
        global_batch_size: int,
        num_steps: int | None = None,
        num_samples: int | None = None,
        seed: int = 0,
        shuffle: bool = True,
    ) -> None:
        if not isinstance(sources, Mapping) or not sources:
            raise ValueError("sources: need a non-empty mapping of name -> dataset")
        self.global_batch_size = _positive_int(global_batch_size, "global_batch_size", 1)
        if (num_steps is None) == (num_samples is None):
            raise ValueError("give exactly one of num_steps and num_samples")
        if num_steps is not None:
            num_samples = _positive_int(num_steps, "num_steps", 0) * self.global_batch_size
        self.num_samples = _positive_int(num_samples, "num_samples", 0)
        self.seed = _positive_int(seed, "seed", 0)
        self.shuffle = bool(shuffle)
        self.sources = dict(sources)
        self.names = list(self.sources)
        self.lengths = [document_count(s) for s in self.sources.values()]
        for name, n in zip(self.names, self.lengths):
            if n < 1:
                raise ValueError(f"sources[{name!r}] is empty: a mixed source needs samples")
        if not isinstance(schedule, MixtureSchedule):
            schedule = MixtureSchedule.constant(check_weights(schedule, "schedule", 0))
        unknown = unknown_streams(schedule, self.names)
        if unknown:
            raise ValueError(f"schedule: streams {unknown} are not among the sources {self.names}")
        self.schedule = schedule
        points = schedule.held_points()
        # Held points: counted by segment (a resume costs O(points)); else step by step.
        self._counts: SegmentCounts | StepCounts = (
            SegmentCounts(points, self.names, self.global_batch_size)
            if points is not None
            else self._step_by_step()
        )
        self.position = 0  # positions consumed (see the module's docstring)
        self._chunk = 1  # the loader's batch size: the unit its workers deal round-robin
        self._layout: tuple[int, NDArray[np.int64], NDArray[np.int64]] | None = None
        self._perms: dict[tuple[int, int], Permutation] = {}

    def _step_by_step(self) -> StepCounts:
        return StepCounts(self.schedule, self.names, self.global_batch_size, self.num_steps)

    def _fingerprint(self, steps: int) -> tuple[str, str]:
        """The key and value that fix the counts of the first ``steps`` steps in a state."""
        if isinstance(self._counts, SegmentCounts):
            return "segments", self._counts.fingerprint(steps)
        return "counts", self._counts.digest(steps)

    def _same_counts(self, sched: Mapping[str, Any], steps: int) -> bool:
        """Whether a state's fingerprint is of these counts. A state of counts hashed step
        by step (a linear or function schedule, or an earlier streamx) is checked that way,
        whichever way this run counts."""
        if "segments" in sched:
            return self._fingerprint(steps) == ("segments", sched["segments"])
        if isinstance(self._counts, StepCounts):
            return bool(self._counts.digest(steps) == sched.get("counts"))
        return bool(self._step_by_step().digest(steps) == sched.get("counts"))

    # -- the sequence --------------------------------------------------------------------

    @property
    def num_steps(self) -> int:
        """Global steps in the run (the last one may be short)."""
        return -(-self.num_samples // self.global_batch_size)

    def __len__(self) -> int:
        return self.num_samples

    def step_counts(self, step: int) -> dict[str, int]:
        """How many samples each source contributes to global ``step``."""
        self._check_step(step)
        return dict(zip(self.names, self._counts.counts(step).tolist()))

    def _check_step(self, step: int) -> None:
        if not 0 <= step < self.num_steps:
            raise IndexError(f"step {step} out of range(0, {self.num_steps})")

    def _step_layout(self, step: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Each position of ``step``: its source, and the source's running sample count."""
        if self._layout is not None and self._layout[0] == step:
            return self._layout[1], self._layout[2]
        counts = self._counts.counts(step)
        labels = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        if self.shuffle:
            np.random.default_rng([self.seed, _STEP_KEY, step]).shuffle(labels)
        order = np.argsort(labels, kind="stable")
        firsts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        ordinal = np.empty(len(labels), np.int64)
        ordinal[order] = np.arange(len(labels)) - np.repeat(firsts, counts)
        ordinal += self._counts.before(step)[labels]
        self._layout = (step, labels, ordinal)
        return labels, ordinal

    def _source_index(self, source: int, ordinal: int) -> int:
        n = self.lengths[source]
        epoch, offset = divmod(ordinal, n)
        if not self.shuffle:
            return offset
        key = (source, epoch)
        perm = self._perms.get(key)
        if perm is None:
            if len(self._perms) > 64:
                self._perms.clear()
            perm = self._perms[key] = Permutation(n, (self.seed, source, epoch))
        return perm(offset)

    def locate(self, position: int) -> tuple[str, int]:
        """The source name and the source's index that ``position`` reads."""
        if not 0 <= position < self.num_samples:
            raise IndexError(f"position {position} out of range(0, {self.num_samples})")
        step, j = divmod(position, self.global_batch_size)
        labels, ordinal = self._step_layout(step)
        source = int(labels[j])
        return self.names[source], self._source_index(source, int(ordinal[j]))

    def __getitem__(self, position: int) -> Any:
        name, index = self.locate(int(position))
        return self.sources[name][index]

    # -- state ---------------------------------------------------------------------------

    def config(self) -> dict[str, object]:
        """The fields that fix the sequence besides the schedule; a state must match them."""
        return {
            # In order: a source's place seeds its permutations and labels its positions.
            "sources": [[name, n] for name, n in zip(self.names, self.lengths)],
            "seed": self.seed,
            "shuffle": self.shuffle,
            "global_batch_size": self.global_batch_size,
        }

    def state_at(self, position: int) -> dict[str, object]:
        """The state of a run that consumed the first ``position`` positions."""
        if not 0 <= position <= self.num_samples:
            raise ValueError(f"position must be in [0, {self.num_samples}], got {position}")
        steps = -(-position // self.global_batch_size)  # every step touched, the last in part
        key, fingerprint = self._fingerprint(steps)
        return {
            "position": position,
            "config": self.config(),
            "schedule": {
                "steps": steps,
                key: fingerprint,
                "cursors": dict(zip(self.names, self._counts.before(steps).tolist())),
            },
        }

    def state_dict(self) -> dict[str, object]:
        """This run's state: the positions consumed (see the module's docstring)."""
        return self.state_at(self.position)

    def check_state(self, state: Mapping[str, Any]) -> int:
        """The position of ``state`` after checking that it comes from this mixture: a
        ``ValueError`` names the first field that differs."""
        missing = [k for k in ("position", "config", "schedule") if k not in state]
        if missing:
            raise ValueError(
                f"state dict lacks {missing}: not a MixedDataset state (a PackedDataset's "
                "loads into the PackedDataset)"
            )
        theirs = dict(state["config"])
        for key, mine in self.config().items():
            if theirs.get(key) != mine:
                raise ValueError(
                    f"state dict is from a different mixture: {key!r} is "
                    f"{theirs.get(key)!r} there and {mine!r} here"
                )
        position = int(state["position"])
        if not 0 <= position <= self.num_samples:
            raise ValueError(
                f"state dict: 'position' {position} is beyond this run's "
                f"num_samples={self.num_samples}"
            )
        sched = dict(state["schedule"])
        steps = int(sched["steps"])
        if not self._same_counts(sched, steps):
            mine = dict(zip(self.names, self._counts.before(steps).tolist()))
            diff = [n for n in self.names if dict(sched["cursors"]).get(n) != mine[n]]
            detail = (
                f"source {diff[0]!r} gave {dict(sched['cursors']).get(diff[0])} samples "
                f"there and {mine[diff[0]]} here"
                if diff
                else "the per-step counts differ"
            )
            raise ValueError(
                f"state dict is from a different schedule: 'schedule' differs in the "
                f"{steps} steps before the resume point ({detail}); a schedule may change "
                f"only from step {steps} on"
            )
        return position

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes after the positions ``state`` consumed (see :meth:`check_state`)."""
        self.position = self.check_state(state)

    @staticmethod
    def merge_states(states: Sequence[Mapping[str, Any]]) -> dict[str, object]:
        """One state from every rank's: the positions all of them consumed (ranks in
        lockstep agree; a rank ahead has its extra items delivered again)."""
        if not states:
            raise ValueError("states: need at least one state dict")
        for state in states[1:]:
            if state["config"] != states[0]["config"]:
                raise ValueError("states differ in 'config': they come from different mixtures")
        return dict(min(states, key=lambda s: int(s["position"])))

    # -- iteration -----------------------------------------------------------------------

    def _positions(self) -> Iterator[int]:
        """This consumer's positions from the resume point, in the order it yields them."""
        world = World.detect()
        ranks, workers = world.num_ranks, world.workers_per_rank
        first = self.position + world.rank
        items = max(0, -(-(self.num_samples - first) // ranks))  # this rank's, from here
        chunk = self._chunk
        for start in range(world.worker_of_rank * chunk, items, workers * chunk):
            for i in range(start, min(start + chunk, items)):
                yield first + i * ranks

    def tagged(self) -> Iterator[Tagged]:
        """This consumer's samples, each with its position as ``(step, index, batch)``;
        records nothing (see :meth:`record`)."""
        for p in self._positions():
            step, j = divmod(p, self.global_batch_size)
            yield [(step, j, self.global_batch_size)], self[p]

    def record(self, provenance: Sequence[Provenance]) -> None:
        """Records these positions as received by this rank: with every rank in lockstep,
        the positions before the next one each rank would take are consumed."""
        world = World.detect()
        for step, j, batch in provenance:
            after = step * batch + j - world.rank + world.num_ranks
            self.position = max(self.position, min(self.num_samples, after))

    def tracked_batches(self, loader: DataLoader) -> Iterator[Any]:  # type: ignore[type-arg]
        """The batches ``loader`` (a torch ``DataLoader`` over this dataset) gives, with this
        dataset's state following what this process received. ``StreamingDataLoader`` uses
        it; with a plain ``DataLoader``, iterate ``mixed.tracked_batches(loader)``."""
        from streamx.packing.tracked import tracked_batches

        if loader.dataset is not self:
            raise ValueError("tracked_batches: the loader iterates another dataset")
        if getattr(loader, "in_order", True) is False:
            raise ValueError("tracked_batches: exact resume needs in_order=True")
        self._chunk = loader.batch_size or 1
        return tracked_batches(self, loader)

    def end_loader_pass(self) -> None:
        """Marks the end of a DataLoader's pass over this dataset, once its workers are gone
        (see ``StreamingDataset.end_loader_pass``): every source's ledger releases what the
        exited workers left. :meth:`tracked_batches` calls it when the pass ends."""
        for source in self.sources.values():
            end_loader_pass(source)

    def __iter__(self) -> Iterator[Any]:
        for provenance, item in self.tagged():
            self.record(provenance)
            yield item

    def __repr__(self) -> str:
        return (
            f"MixedDataset(sources={dict(zip(self.names, self.lengths))}, "
            f"schedule={self.schedule!r}, global_batch_size={self.global_batch_size}, "
            f"num_samples={self.num_samples}, seed={self.seed}, shuffle={self.shuffle})"
        )
