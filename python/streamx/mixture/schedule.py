"""``MixtureSchedule``: the weight of each named stream at each global step.

A schedule is one of three forms, all evaluated per global step (a step is
``global_batch_size`` consecutive positions of a :class:`~streamx.mixture.MixedDataset`):

- points ``{step: weights}`` held until the next point (``interpolate="step"``), or moved
  linearly towards the next point (``interpolate="linear"``); after the last point the
  weights stay. :meth:`MixtureSchedule.at_tokens` places the points at token counts instead.
- a function ``step -> weights``, evaluated at every step.

Weights need not sum to 1 (they are normalised per step); a stream left out weighs 0.
Every weight is checked where it enters: a negative or non-finite weight, or a step whose
weights are all zero, is a ``ValueError`` that names the argument and the step.

The per-step rounding of weights into whole samples carries its error to the next step, so
long-run proportions follow the weights to within a sample; the carry restarts at every
point and wherever the set of streams with a non-zero weight changes, so that a point's
weights take effect at its step exactly (see :mod:`streamx.mixture.counts`).
"""

from __future__ import annotations

import bisect
import math
import numbers
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

__all__ = ["MixtureSchedule", "Weights"]

Weights = Mapping[str, float]
_MODES = ("step", "linear")


def check_weights(weights: object, argument: str, step: int) -> dict[str, float]:
    """``weights`` as a plain dict after the checks every weight passes."""
    if not isinstance(weights, Mapping):
        raise TypeError(
            f"{argument}: the weights at step {step} must be a mapping of stream name to "
            f"weight, got {type(weights).__name__}"
        )
    out: dict[str, float] = {}
    for name, value in weights.items():
        if not isinstance(name, str):
            raise TypeError(f"{argument}: stream names must be str, got {name!r} at step {step}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(
                f"{argument}: the weight of {name!r} at step {step} must be a number, "
                f"got {type(value).__name__}"
            )
        if not math.isfinite(value):
            raise ValueError(f"{argument}: the weight of {name!r} at step {step} is {value}")
        if value < 0:
            raise ValueError(
                f"{argument}: the weight of {name!r} at step {step} is negative ({value})"
            )
        out[name] = float(value)
    if not sum(out.values()) > 0:
        raise ValueError(f"{argument}: the weights at step {step} sum to zero: {out}")
    return out


def _normalised(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {name: value / total for name, value in weights.items()}


class MixtureSchedule:
    """Stream weights per global step.

    Args:
        points: ``{step: {stream: weight}}`` (or a sequence of such pairs); the first point
            must be at step 0. Weights are relative: each step's are divided by their sum.
        interpolate: ``"step"`` holds a point's weights until the next point; ``"linear"``
            moves them linearly (in normalised form) to the next point's.

    Examples:
        >>> s = MixtureSchedule({0: {"web": 3, "code": 1}, 100: {"web": 1, "code": 1}})
        >>> s.weights(99), s.weights(100)
        ({'web': 0.75, 'code': 0.25}, {'web': 0.5, 'code': 0.5})
    """

    def __init__(
        self,
        points: Mapping[int, Weights] | Sequence[tuple[int, Weights]],
        *,
        interpolate: Literal["step", "linear"] = "step",
    ) -> None:
        if interpolate not in _MODES:
            raise ValueError(f"interpolate must be one of {_MODES}, got {interpolate!r}")
        pairs = list(points.items()) if isinstance(points, Mapping) else list(points)
        if not pairs:
            raise ValueError("points: a schedule needs at least one point (at step 0)")
        checked: dict[int, dict[str, float]] = {}
        for step, weights in pairs:
            if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
                raise ValueError(f"points: steps must be integers >= 0, got {step!r}")
            step = int(step)
            if step in checked:
                raise ValueError(f"points: step {step} is given twice")
            checked[step] = _normalised(check_weights(weights, "points", step))
        if min(checked) != 0:
            raise ValueError(f"points: the first point must be at step 0, got {min(checked)}")
        self._steps = sorted(checked)
        self._points = [checked[s] for s in self._steps]
        self._fn: Callable[[int], Weights] | None = None
        self.interpolate = interpolate

    @classmethod
    def constant(cls, weights: Weights) -> MixtureSchedule:
        """The same weights at every step."""
        return cls({0: weights})

    @classmethod
    def at_tokens(
        cls,
        points: Mapping[int, Weights] | Sequence[tuple[int, Weights]],
        *,
        tokens_per_step: int,
        interpolate: Literal["step", "linear"] = "step",
    ) -> MixtureSchedule:
        """Points at token counts: the weights of ``tokens`` apply from the first step that
        starts at or after that many tokens, ``ceil(tokens / tokens_per_step)``. Exact for
        samples of a fixed ``seq_len`` tokens (``tokens_per_step = seq_len * global batch``);
        for documents of varying length (a mixture packed by ``PackedDataset``), an
        estimate from their mean length."""
        if isinstance(tokens_per_step, bool) or not isinstance(tokens_per_step, int):
            raise TypeError(f"tokens_per_step must be an int, got {tokens_per_step!r}")
        if tokens_per_step < 1:
            raise ValueError(f"tokens_per_step must be at least 1, got {tokens_per_step}")
        pairs = list(points.items()) if isinstance(points, Mapping) else list(points)
        steps: dict[int, Weights] = {}
        for tokens, weights in pairs:
            if isinstance(tokens, bool) or not isinstance(tokens, numbers.Integral) or tokens < 0:
                raise ValueError(f"points: token counts must be integers >= 0, got {tokens!r}")
            step = -(-int(tokens) // tokens_per_step)
            if step in steps:
                raise ValueError(
                    f"points: token count {tokens} falls on step {step}, as an earlier "
                    f"point does (tokens_per_step={tokens_per_step})"
                )
            steps[step] = weights
        return cls(steps, interpolate=interpolate)

    @classmethod
    def from_function(cls, weights: Callable[[int], Weights]) -> MixtureSchedule:
        """Weights from ``weights(step)``, which must be a pure function of the step (it is
        evaluated again on resume, in every process)."""
        if not callable(weights):
            raise TypeError(f"weights must be callable (step -> weights), got {weights!r}")
        schedule = cls({0: {"_": 1.0}})
        schedule._steps, schedule._points, schedule._fn = [], [], weights
        return schedule

    # -- evaluation ----------------------------------------------------------------------

    def streams(self) -> set[str]:
        """The stream names the points mention (empty for a function)."""
        return {name for weights in self._points for name in weights}

    def weights(self, step: int) -> dict[str, float]:
        """The normalised weights at ``step`` (streams of weight 0 may be left out)."""
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        if self._fn is not None:
            return _normalised(check_weights(self._fn(step), "weights", step))
        i = _last_at_or_before(self._steps, step)
        here = self._points[i]
        if self.interpolate == "step" or i + 1 == len(self._steps):
            return dict(here)
        s0, s1, there = self._steps[i], self._steps[i + 1], self._points[i + 1]
        t = (step - s0) / (s1 - s0)
        names = sorted(set(here) | set(there))
        return {n: here.get(n, 0.0) * (1 - t) + there.get(n, 0.0) * t for n in names}

    def restarts(self, step: int) -> bool:
        """Whether ``step`` is one of the points (the rounding carry restarts there)."""
        if self._fn is not None:
            return False
        i = bisect.bisect_left(self._steps, step)
        return i < len(self._steps) and self._steps[i] == step

    def held_until(self, step: int) -> int:
        """The first step after ``step`` whose weights may differ from ``step``'s (the next
        point; ``step + 1`` for a function or between linear points)."""
        if self._fn is not None:
            return step + 1
        i = bisect.bisect_right(self._steps, step)
        if i == len(self._steps):
            return sys.maxsize
        return self._steps[i] if self.interpolate == "step" else step + 1

    def held_points(self) -> list[tuple[int, dict[str, float]]] | None:
        """The points, each held until the next (``interpolate="step"``), or ``None`` where
        the weights may change at every step (linear interpolation, a function)."""
        if self._fn is not None or self.interpolate != "step":
            return None
        return [(step, dict(weights)) for step, weights in zip(self._steps, self._points)]

    def describe(self) -> list[tuple[int, dict[str, float]]] | str:
        """The points, or the function's name: for error messages and ``repr``."""
        if self._fn is not None:
            return getattr(self._fn, "__qualname__", repr(self._fn))
        return list(zip(self._steps, self._points))

    def __repr__(self) -> str:
        return f"MixtureSchedule({self.describe()!r}, interpolate={self.interpolate!r})"


def _last_at_or_before(steps: Sequence[int], step: int) -> int:
    """Index of the last of the sorted ``steps`` at or before ``step`` (-1 if none)."""
    return bisect.bisect_right(steps, step) - 1


def unknown_streams(schedule: MixtureSchedule, names: Iterable[str]) -> list[str]:
    """The streams the schedule's points name that are not among ``names``."""
    return sorted(schedule.streams() - set(names))
