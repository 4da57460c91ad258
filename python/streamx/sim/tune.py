"""The planner: the cheapest settings a user controls that keep a run as fast as it gets.

The knobs are the DataLoader's ``workers``, the dataset's ``predownload`` and
``cache_limit``, and the downloader's ``connections`` (``STREAMX_DOWNLOAD_CONNECTIONS``)
and ``part_size`` (``STREAMX_DOWNLOAD_PART_SIZE``). Everything else (the cluster, the
link, the data) stays as given; a calibrated loader's cost per sample
(``SimConfig.loader_time_per_sample``) is shared by each candidate's own workers.

The search is greedy, one knob at a time over a few values each (two passes):

1. *as fast as it gets*: from the given settings, each knob in turn takes the value with
   the highest predicted throughput; the best throughput seen anywhere is the bound;
2. *as cheap as that*: from the given settings (from the fastest found when the given
   ones are not within ``tolerance`` of it), each knob in turn takes the cheapest value
   whose run stays within ``tolerance`` (2%) of the bound and is no slower than the given
   settings.
   Cheaper means fewer requests, then a smaller cache (the run's ``min_cache_limit``, or
   its ``cache_limit`` when one is set), then fewer workers.

So the recommendation is never predicted slower than the settings given. Under a throttled
share given as ``throttled`` it never has more connections than given: more requests at
once draw more throttled answers, and the model takes that share as given. Under a
``request_rate`` the model plays the requests against the limit
(:mod:`~streamx.sim.request_cap`), so the connections and part size are searched like the
other knobs: the cold start's clump is split as they say, and with fewer connections the
paced look-ahead takes its start slots as answers come, so the pace they raise spaces
them. A run under a
``cache_limit`` is never counted faster than the same run without one (the eviction model
has no slow start, :mod:`~streamx.sim.lru`). A greedy search
can miss a combination that only pays when two knobs move together; the grid is small on
purpose (each point is one simulation: give a short run, ``--max-batches``, for a large
dataset).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamx.sim.config import SimConfig
from streamx.sim.display import fmt_dollars
from streamx.sim.result import Summary
from streamx.sim.run import simulate
from streamx.sim.units import fmt_bytes

__all__ = ["KNOBS", "Point", "TuneResult", "knob_values", "settings_of", "tune"]

MIB = 1 << 20
KNOBS = ("connections", "part_size", "workers", "predownload", "cache_limit")
_WORKERS = (1, 2, 4, 8, 16)
_PREDOWNLOAD_BATCHES = (1, 2, 4, 8, 16, 32, 64)
_CONNECTIONS = (4, 8, 16, 32, 64, 128)
_PART_MIB = (1, 2, 4, 8, 16, 32, 64)
_CACHE_SHARES = (0.25, 0.5, 0.75)


@dataclass(frozen=True)
class Point:
    """One simulated setting.

    Attributes:
        config: The run with the knobs set.
        summary: Its predicted figures.
    """

    config: SimConfig
    summary: Summary

    @property
    def cache(self) -> int:
        """The cache the run needs: its limit if it has one, else what it holds at most."""
        return self.config.cache_limit or self.summary["min_cache_limit"]

    def cost_key(self) -> tuple[int, int, int]:
        """What "cheaper" compares: requests, cache, workers (a smaller predownload that
        saves neither requests nor cache saves nothing, and the window is where the model
        errs most: on a per-connection cap a smaller one measured slower than predicted)."""
        c = self.config
        return (self.summary["requests"], self.cache, c.workers)

    def line(self) -> str:
        """The settings and figures, for people."""
        s, knobs = self.summary, self.settings()
        limit = knobs["cache_limit"]
        return (
            f"workers={knobs['workers']} predownload={knobs['predownload']} "
            f"connections={knobs['connections']} part_size={fmt_bytes(knobs['part_size'])} "
            f"cache_limit={fmt_bytes(limit) if limit else 'none'}: "
            f"{s['samples_per_s']:,.1f} samples/s, {s['requests_per_epoch']:,.0f} requests and "
            f"{fmt_dollars(s['request_cost_per_epoch'])} per epoch, cache {fmt_bytes(self.cache)}"
        )

    def as_json(self) -> dict[str, Any]:
        """The settings and the summary."""
        return {"settings": self.settings(), "summary": dict(self.summary)}

    def settings(self) -> dict[str, Any]:
        """The knobs' values (``cache_limit`` None: no limit)."""
        return settings_of(self.config)


def settings_of(config: SimConfig) -> dict[str, Any]:
    """The knobs' values of ``config`` (``cache_limit`` None: no limit)."""
    return {
        "workers": config.workers,
        "predownload": config.predownload
        if config.predownload is not None
        else 8 * config.batch_size,
        "connections": config.connections,
        "part_size": config.part_size,
        "cache_limit": config.cache_limit or None,
    }


@dataclass(frozen=True)
class TuneResult:
    """What :func:`tune` found.

    Attributes:
        given: The settings given (the defaults unless set).
        recommended: The cheapest setting within ``tolerance`` of the fastest.
        best_samples_per_s: The fastest predicted throughput seen.
        tolerance: The share of it a recommendation may give up.
        simulations: Settings simulated.
    """

    given: Point
    recommended: Point
    best_samples_per_s: float
    tolerance: float
    simulations: int

    def as_json(self) -> dict[str, Any]:
        """The result as JSON (sizes in bytes, rates in samples per second)."""
        return {
            "given": self.given.as_json(),
            "recommended": self.recommended.as_json(),
            "best_samples_per_s": self.best_samples_per_s,
            "tolerance": self.tolerance,
            "simulations": self.simulations,
        }

    def advice(self) -> list[str]:
        """Where each recommended knob is set, for people."""
        k = self.recommended.settings()
        limit = k["cache_limit"]
        return [
            f"DataLoader(num_workers={k['workers']})",
            f"StreamingDataset(predownload={k['predownload']}, cache_limit="
            + (f"'{fmt_bytes(limit).replace(' ', '')}')" if limit else "None)"),
            f"STREAMX_DOWNLOAD_CONNECTIONS={k['connections']} "
            f"STREAMX_DOWNLOAD_PART_SIZE={k['part_size']}",
        ]


def knob_values(
    config: SimConfig, knob: str, need: int, only: Mapping[str, Sequence[Any]] | None = None
) -> list[Any]:
    """The values the search tries for ``knob`` (the given one among them); ``need`` is the
    cache the current run holds, which the cache limits are shares of; ``only`` replaces a
    knob's values (the given one stays among them)."""
    if knob not in KNOBS:
        raise ValueError(f"`{knob}` is not a knob; the knobs are {list(KNOBS)}")
    if only is not None and knob in only:
        given = settings_of(config)[knob]
        return sorted({*only[knob], given}, key=lambda v: (v is not None, v or 0))
    if knob == "cache_limit":
        values: list[Any] = [None] + [max(int(need * s), 1) for s in _CACHE_SHARES if need]
        return values if config.cache_limit is None else [*values, config.cache_limit]
    if knob == "workers":
        values = [*_WORKERS, config.workers]
    elif knob == "predownload":
        values = [b * config.batch_size for b in _PREDOWNLOAD_BATCHES]
        values.append(settings_of(config)["predownload"])
    elif knob == "connections":
        values = [*_CONNECTIONS, config.connections]
    else:
        values = [m * MIB for m in _PART_MIB] + [config.part_size]
    return sorted(set(values))


class _Runs:
    """Simulations by setting, each run once; a setting streamx could not hold (a cache
    limit below what single steps read) counts as never fast enough."""

    def __init__(self, base: SimConfig) -> None:
        self.base = base
        self.done: dict[tuple[Any, ...], Point | None] = {}

    def __call__(self, config: SimConfig) -> Point | None:
        key = tuple(settings_of(config).values())
        if key not in self.done:
            with warnings.catch_warnings():
                warnings.simplefilter("error", UserWarning)
                try:
                    summary = simulate(config).summary()
                except UserWarning:
                    self.done[key] = None
                    return None
            if config.cache_limit:
                # The eviction model runs every download at ``bandwidth`` (no slow start),
                # so it can come out faster than the same run without a limit; a limit
                # never makes a run faster.
                free = self(config.with_(cache_limit=None))
                if free is not None and _speed(free) < summary["samples_per_s"]:
                    summary = {**summary, "samples_per_s": _speed(free)}  # type: ignore[typeddict-item]
            self.done[key] = Point(config, summary)
        return self.done[key]


def _speed(point: Point | None) -> float:
    return point.summary["samples_per_s"] if point is not None else -1.0


def _sweep(
    runs: _Runs,
    start: Point,
    better: Callable[[Point, Point], bool],
    only: Mapping[str, Sequence[Any]] | None,
) -> Point:
    """One knob at a time, the value ``better`` prefers to the current point's."""
    current = start
    for knob in KNOBS:
        need = current.summary["min_cache_limit"]
        for value in knob_values(current.config, knob, need, only):
            point = runs(current.config.with_(**{knob: value}))
            if point is not None and better(point, current):
                current = point
    return current


def tune(
    config: SimConfig,
    *,
    tolerance: float = 0.02,
    passes: int = 2,
    only: Mapping[str, Sequence[Any]] | None = None,
) -> TuneResult:
    """Searches the knobs for the cheapest setting within ``tolerance`` of the fastest.

    Args:
        config: The run, with the settings to compare against (the defaults unless set).
        tolerance: The share of the best throughput a cheaper setting may give up.
        passes: Sweeps over the knobs in each phase.
        only: Values to try instead of the built-in ones, per knob (e.g. ``{"workers":
            [1, 2]}`` on a machine of two cores: the model does not see CPUs); a knob with
            one value is held.

    Raises:
        ValueError: If ``tolerance`` is not in ``[0, 1)``, or the run is inconsistent.

    Examples:
        >>> from streamx.sim import SimConfig, SimStream, synth_shards
        >>> shards = synth_shards(8_000, 1_000, 64 << 20)
        >>> cfg = SimConfig((SimStream(shards),), devices=2, workers=1, batch_size=8,
        ...                 time_per_sample=0.01, bandwidth=1e9, connection_bandwidth=40e6)
        >>> found = tune(cfg)
        >>> found.recommended.summary["requests"] <= found.given.summary["requests"]
        True
    """
    if not 0 <= tolerance < 1:
        raise ValueError(f"`tolerance` must be in [0, 1), got {tolerance!r}")
    if config.throttled and not (only and "connections" in only):
        # More requests at once draw more throttled answers, which the model does not see
        # (it takes the share as given): under throttling, never more connections.
        fewer = [c for c in _CONNECTIONS if c <= config.connections]
        only = {**(only or {}), "connections": fewer}
    runs = _Runs(config)
    given = runs(config)
    if given is None:
        raise ValueError("the given cache_limit is below what single steps read")
    fast = given
    for _ in range(passes):
        fast = _sweep(runs, fast, lambda p, c: _speed(p) > _speed(c), only)
    best = max(_speed(p) for p in runs.done.values())
    floor = max(best * (1 - tolerance), _speed(given))

    def cheaper(point: Point, current: Point) -> bool:
        ok = _speed(point) >= floor
        return ok and (_speed(current) < floor or point.cost_key() < current.cost_key())

    # From the given settings when they are fast enough: a knob moves only where that is
    # cheaper, never to a value the model merely finds as fast (its error is larger than
    # such a difference).
    fastest = max((p for p in runs.done.values() if p is not None), key=_speed)
    cheap = given if _speed(given) >= floor else fastest
    for _ in range(passes):
        cheap = _sweep(runs, cheap, cheaper, only)
    return TuneResult(given, cheap, best, tolerance, len(runs.done))
