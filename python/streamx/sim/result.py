"""A simulation's outcome and the figures derived from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
from numpy.typing import NDArray

from streamx.sim.config import SimConfig
from streamx.sim.requests import RequestCount

__all__ = ["SimResult", "Summary", "rolling_throughput"]

# A step counts as slowed when downloads add more than this fraction to its compute time.
_SLOW_TOLERANCE = 1e-9


class Summary(TypedDict):
    """The headline figures of a run (all times in seconds, sizes in bytes)."""

    name: str
    steps: int
    samples: int
    total_time: float
    samples_per_s: float
    bytes_downloaded: int
    time_to_first_batch: float
    warmup_time: float
    warmup_step: int
    slowed_steps: int
    slowed_steps_after_warmup: int
    stall_time: float
    min_cache_limit: int
    requests: int
    throttled_requests: int
    requests_per_gb: float
    requests_per_epoch: float
    price_per_1000: float
    request_cost: float
    request_cost_per_epoch: float
    simulate_seconds: float


def rolling_throughput(step_times: NDArray[np.float64], window: int = 10) -> NDArray[np.float64]:
    """Steps per second averaged over ``window`` steps; 0 before the first full window."""
    if len(step_times) < window:
        return np.zeros(len(step_times))
    mean = np.convolve(step_times, np.ones(window) / window, mode="valid")
    return np.concatenate([np.zeros(window - 1), 1.0 / mean])


@dataclass(frozen=True)
class SimResult:
    """What :func:`~streamx.sim.simulate` found.

    Attributes:
        config: The simulated run.
        step_times: Seconds each global step took.
        step_bytes: Bytes downloaded by all nodes during each step.
        node_stall: Seconds each node waited for shards, per (step, node).
        min_cache_limit: The smallest per-node cache that holds every shard from its
            download to its last use (mosaic's definition).
        simulate_seconds: Wall time the simulation took.
        requests: The requests the run sends (:mod:`~streamx.sim.requests`).
        epoch_steps: Steps in one epoch (to price an epoch).
    """

    config: SimConfig
    step_times: NDArray[np.float64]
    step_bytes: NDArray[np.int64]
    node_stall: NDArray[np.float64]
    min_cache_limit: int
    simulate_seconds: float = field(default=0.0, compare=False)
    requests: RequestCount = field(default_factory=lambda: RequestCount(0, 0, 0, 0, 0))
    epoch_steps: int = 0

    @property
    def global_batch(self) -> int:
        """Samples per global step."""
        c = self.config
        return c.batch_size * c.devices * c.nodes

    def warmup(self) -> tuple[int, float]:
        """(steps, seconds) until the rolling throughput first reaches the compute bound.

        The whole run when it never does.
        """
        compute = self.config.step_compute_time
        rolling = rolling_throughput(self.step_times)
        reached = rolling >= (1.0 / compute) * (1 - 1e-9) if compute > 0 else rolling > 0
        if not reached.any():
            return len(self.step_times), float(self.step_times.sum())
        step = int(np.argmax(reached)) + 1
        return step, float(self.step_times[:step].sum())

    def summary(self) -> Summary:
        """The headline figures."""
        compute = self.config.step_compute_time
        slowed = self.step_times > compute * (1 + _SLOW_TOLERANCE) + 1e-12
        warm_step, warm_time = self.warmup()
        total = float(self.step_times.sum())
        steps = len(self.step_times)
        return {
            "name": self.config.name,
            "steps": steps,
            "samples": steps * self.global_batch,
            "total_time": total,
            "samples_per_s": steps * self.global_batch / total if total > 0 else 0.0,
            "bytes_downloaded": int(self.step_bytes.sum()),
            "time_to_first_batch": float(self.step_times[0]) if steps else 0.0,
            "warmup_time": warm_time,
            "warmup_step": warm_step,
            "slowed_steps": int(slowed.sum()),
            "slowed_steps_after_warmup": int(slowed[warm_step:].sum()) if warm_step < steps else 0,
            "stall_time": float(self.node_stall.max(axis=1).sum()) if steps else 0.0,
            "min_cache_limit": self.min_cache_limit,
            **self._request_figures(),
            "simulate_seconds": self.simulate_seconds,
        }

    def _request_figures(self) -> _RequestFigures:
        """The requests, their rate per GB and their price over the run and per epoch."""
        req, price = self.requests, self.config.price_per_1000
        steps = len(self.step_times)
        epochs = steps / self.epoch_steps if self.epoch_steps else 1.0
        return {
            "requests": req.requests,
            "throttled_requests": req.throttled,
            "requests_per_gb": req.per_gb(),
            "requests_per_epoch": req.requests / epochs if epochs else 0.0,
            "price_per_1000": price,
            "request_cost": req.cost(price),
            "request_cost_per_epoch": req.cost(price) / epochs if epochs else 0.0,
        }


class _RequestFigures(TypedDict):
    requests: int
    throttled_requests: int
    requests_per_gb: float
    requests_per_epoch: float
    price_per_1000: float
    request_cost: float
    request_cost_per_epoch: float
