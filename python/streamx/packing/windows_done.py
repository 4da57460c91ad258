"""Which windows of a packed epoch are done, in memory bounded by the work, not the epoch.

An epoch of 10^10 documents has about 10^7 windows. A set of the done ones, or a list of the
unfinished ones to deal out, would cost gigabytes per process and as much again in every
state dict. Two facts keep both small:

- Windows done before a pass began are mostly one run from window 0: :class:`Runs` keeps
  them as sorted, disjoint ``[start, end)`` pairs.
- A pass deals the windows not in those runs round-robin to its ``C`` consumers (ranks x
  DataLoader workers), and each consumer finishes its windows in order. A consumer's
  progress is therefore one count: consumer ``c`` has finished the unfinished windows
  ``c, c + C, ..., c + (k - 1) * C`` (positions among the unfinished ones).

A :class:`Progress` holds both. It becomes runs again (:meth:`Progress.fold`) when a state is
loaded, or when the consumer count changes. Consumers advance at about the same rate, so the
counts differ by a few windows and the fold adds few runs. A window finished out of turn
(which a consumer's in-order stream never does) is kept aside, never dropped.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

__all__ = ["Progress", "Runs"]


class Runs:
    """Sorted, disjoint, non-adjacent ``[start, end)`` runs of window ids."""

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()) -> None:
        merged: list[list[int]] = []
        for start, end in sorted((int(s), int(e)) for s, e in pairs if int(e) > int(s)):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.starts = [s for s, _ in merged]
        self.ends = [e for _, e in merged]
        # Windows in runs before run i, and windows outside runs before run i starts.
        self._inside = [0]
        for s, e in merged:
            self._inside.append(self._inside[-1] + e - s)
        self._outside = [s - self._inside[i] for i, s in enumerate(self.starts)]

    def pairs(self) -> list[tuple[int, int]]:
        return list(zip(self.starts, self.ends, strict=True))

    def __len__(self) -> int:
        """Windows in the runs."""
        return self._inside[-1]

    def __contains__(self, window: int) -> bool:
        i = bisect_right(self.starts, window) - 1
        return i >= 0 and window < self.ends[i]

    def union(self, pairs: Iterable[tuple[int, int]]) -> Runs:
        return Runs([*self.pairs(), *pairs])

    def last(self) -> int:
        """The highest window in the runs (-1 when empty)."""
        return self.ends[-1] - 1 if self.ends else -1

    def outside_at(self, position: int) -> int:
        """The ``position``-th window (from 0) not in the runs."""
        return position + self._inside[bisect_right(self._outside, position)]

    def position_outside(self, window: int) -> int:
        """Where ``window``, which is not in the runs, falls among the windows that are not."""
        return window - self._inside[bisect_right(self.ends, window)]


def _pairs(done: Iterable[object]) -> Iterator[tuple[int, int]]:
    """A state's ``done`` entries as pairs; a lone window id is an older state's entry."""
    for entry in done:
        if isinstance(entry, int):
            yield entry, entry + 1
        elif isinstance(entry, list | tuple) and len(entry) == 2:
            yield int(entry[0]), int(entry[1])
        else:
            raise ValueError(f"state dict: a 'done' entry must be [start, end], got {entry!r}")


@dataclass
class Progress:
    """The windows done: ``runs`` before the current deal, the deal's counts per consumer,
    and any window finished out of turn (``aside``)."""

    runs: Runs = field(default_factory=Runs)
    consumers: int | None = None  # the current deal's consumer count
    finished: dict[int, int] = field(default_factory=dict)  # consumer -> windows finished
    aside: set[int] = field(default_factory=set)

    # -- a pass --------------------------------------------------------------------------

    def deal(self, consumers: int) -> None:
        """Starts (or continues) dealing the unfinished windows to ``consumers``. The same
        count continues the deal; another folds it into runs first."""
        if consumers != self.consumers:
            self.runs = self.fold()
            self.consumers, self.finished, self.aside = consumers, {}, set()

    def turns(self, consumer: int, total_windows: int) -> Iterator[int]:
        """The windows ``consumer`` still packs in this deal, in order."""
        consumers, runs = self._consumers(), self.runs  # this deal's, should another start
        left = total_windows - len(runs)
        first = consumer + self.finished.get(consumer, 0) * consumers
        for position in range(first, left, consumers):
            window = runs.outside_at(position)
            if window not in self.aside:
                yield window

    def finish(self, window: int) -> None:
        """Records ``window`` as done."""
        if self.consumers is not None and window not in self.runs:
            position = self.runs.position_outside(window)
            consumer, turn = position % self.consumers, position // self.consumers
            if self.finished.get(consumer, 0) == turn:
                self.finished[consumer] = turn + 1
                return
        self.aside.add(window)

    def is_done(self, window: int) -> bool:
        if window in self.runs or window in self.aside:
            return True
        if self.consumers is None:
            return False
        position = self.runs.position_outside(window)
        return position // self.consumers < self.finished.get(position % self.consumers, 0)

    def _consumers(self) -> int:
        if self.consumers is None:
            raise RuntimeError("Progress: no deal started (call deal(consumers) first)")
        return self.consumers

    # -- runs again ----------------------------------------------------------------------

    def fold(self) -> Runs:
        """Every window done, as runs: the deal's counts and the windows aside included."""
        extra = [(w, w + 1) for w in self.aside]
        if self.consumers is None or not self.finished:
            return self.runs.union(extra)
        consumers = self.consumers
        least = min(self.finished.get(c, 0) for c in range(consumers))
        if least:  # the first least * C unfinished windows are all done: one prefix
            extra.append((0, self.runs.outside_at(least * consumers - 1) + 1))
        for consumer, count in self.finished.items():
            for turn in range(least, count):
                window = self.runs.outside_at(consumer + turn * consumers)
                extra.append((window, window + 1))
        return self.runs.union(extra)

    def last(self) -> int:
        """The highest window done (-1 when none)."""
        highest = max([self.runs.last(), *self.aside])
        for consumer, count in self.finished.items():
            if count:
                highest = max(
                    highest, self.runs.outside_at(consumer + (count - 1) * self._consumers())
                )
        return highest

    # -- state dicts ---------------------------------------------------------------------

    def state(self) -> dict[str, object]:
        """``done`` (the runs the deal started from), once a deal started ``dealt`` (its
        consumer count and counts), and ``aside`` when a window was finished out of turn.
        The counts are positions among the windows outside ``done``, so the windows aside
        stay out of it."""
        state: dict[str, object] = {"done": [list(p) for p in self.runs.pairs()]}
        if self.consumers is not None:
            state["dealt"] = {
                "consumers": self.consumers,
                "finished": dict(sorted(self.finished.items())),
            }
        if self.aside:
            state["aside"] = sorted(self.aside)
        return state

    @classmethod
    def of_state(cls, state: Mapping[str, object]) -> Progress:
        """The progress a state dict records (its ``done`` and ``dealt``)."""
        done = state.get("done", [])
        if not isinstance(done, list):
            raise ValueError(f"state dict: 'done' must be a list, got {type(done).__name__}")
        aside = state.get("aside", [])
        if not isinstance(aside, list):
            raise ValueError(f"state dict: 'aside' must be a list, got {type(aside).__name__}")
        progress = cls(runs=Runs(_pairs(done)), aside={int(w) for w in aside})
        dealt = state.get("dealt")
        if dealt is not None:
            if not isinstance(dealt, Mapping):
                raise ValueError(f"state dict: 'dealt' must be a mapping, got {dealt!r}")
            consumers = int(dealt["consumers"])
            if consumers < 1:
                raise ValueError(f"state dict: 'dealt' consumers must be >= 1, got {consumers}")
            progress.consumers = consumers
            finished = dealt["finished"]
            if not isinstance(finished, Mapping):
                raise ValueError(
                    f"state dict: 'dealt' finished must be a mapping, got {finished!r}"
                )
            for c, n in finished.items():
                if not 0 <= int(c) < consumers or int(n) < 0:
                    raise ValueError(
                        f"state dict: 'dealt' finished has consumer {c} with {n} windows, "
                        f"outside {consumers} consumers"
                    )
                progress.finished[int(c)] = int(n)
        return progress

    @classmethod
    def merged(cls, progresses: list[Progress]) -> Progress:
        """The windows any of ``progresses`` finished. Ranks of one run share the runs and
        the deal, so their counts merge per consumer; progresses of different deals fold
        first (per deal, so that no rank's strided windows are ever listed one by one)."""
        deals: dict[tuple[tuple[tuple[int, int], ...], int | None], Progress] = {}
        for p in progresses:
            joined = deals.setdefault((tuple(p.runs.pairs()), p.consumers), cls(runs=p.runs))
            joined.consumers = p.consumers
            joined.aside |= p.aside
            for c, n in p.finished.items():
                joined.finished[c] = max(joined.finished.get(c, 0), n)
        if len(deals) == 1:
            return next(iter(deals.values()))
        runs = Runs()
        for joined in deals.values():
            runs = runs.union(joined.fold().pairs())
        return cls(runs=runs)
