"""``MixtureSchedule`` and the per-step counts: bad weights are a ``ValueError`` naming the
argument and the step; a point's weights hold from its step exactly; long-run proportions
stay within a sample of the weights (the rounding error is carried, never lost)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from streamx import MixedDataset, MixtureSchedule
from streamx.mixture.counts import apportion, quotas


def _lists(n: int = 50) -> dict[str, list[int]]:
    return {name: list(range(k * 1000, k * 1000 + n)) for k, name in enumerate("abc")}


def _counts(m: MixedDataset, steps: range) -> list[tuple[int, ...]]:
    return [tuple(m.step_counts(t).values()) for t in steps]


@pytest.mark.parametrize(
    ("points", "match"),
    [
        ({0: {"a": -1.0, "b": 2.0}}, r"points: the weight of 'a' at step 0 is negative"),
        ({0: {"a": 0.0, "b": 0}}, r"points: the weights at step 0 sum to zero"),
        ({0: {"a": 1.0}, 7: {}}, r"points: the weights at step 7 sum to zero"),
        ({0: {"a": math.nan}}, r"points: the weight of 'a' at step 0 is nan"),
        ({0: {"a": 1.0}, 3: {"b": math.inf}}, r"points: the weight of 'b' at step 3 is inf"),
        ({5: {"a": 1.0}}, r"points: the first point must be at step 0"),
        ({0: {"a": 1.0}, -2: {"a": 1.0}}, r"points: steps must be integers >= 0"),
        ({}, r"points: a schedule needs at least one point"),
    ],
)
def test_bad_points(points: dict[int, dict[str, float]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MixtureSchedule(points)


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="weight of 'a' at step 0 must be a number"):
        MixtureSchedule({0: {"a": "1"}})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="step 0 must be a mapping"):
        MixtureSchedule({0: [1.0]})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="interpolate"):
        MixtureSchedule({0: {"a": 1}}, interpolate="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tokens_per_step"):
        MixtureSchedule.at_tokens({0: {"a": 1}}, tokens_per_step=0)
    with pytest.raises(ValueError, match="token count 150 falls on step 2"):
        MixtureSchedule.at_tokens({0: {"a": 1}, 120: {"a": 2}, 150: {"b": 1}}, tokens_per_step=100)
    with pytest.raises(TypeError, match="callable"):
        MixtureSchedule.from_function({0: {"a": 1}})  # type: ignore[arg-type]
    src = _lists()
    with pytest.raises(ValueError, match=r"schedule: streams \['d'\] are not among"):
        MixedDataset(
            src, MixtureSchedule({0: {"a": 1}, 4: {"d": 1}}), global_batch_size=4, num_steps=9
        )
    with pytest.raises(ValueError, match="schedule: the weights at step 0 sum to zero"):
        MixedDataset(src, {"a": 0, "b": 0}, global_batch_size=4, num_steps=9)
    with pytest.raises(ValueError, match="schedule: the weight of 'b' at step 0 is negative"):
        MixedDataset(src, {"a": 1, "b": -0.5}, global_batch_size=4, num_steps=9)
    with pytest.raises(ValueError, match="global_batch_size must be at least 1"):
        MixedDataset(src, {"a": 1}, global_batch_size=0, num_steps=9)
    with pytest.raises(ValueError, match="exactly one of num_steps and num_samples"):
        MixedDataset(src, {"a": 1}, global_batch_size=4, num_steps=9, num_samples=36)
    with pytest.raises(ValueError, match=r"sources\['b'\] is empty"):
        MixedDataset({"a": [1], "b": []}, {"a": 1}, global_batch_size=4, num_steps=9)


def test_function_weights_are_checked_at_their_step() -> None:
    def weights(step: int) -> dict[str, float]:
        return {"a": 1.0, "b": 1.0 if step < 5 else -1.0}

    m = MixedDataset(
        _lists(), MixtureSchedule.from_function(weights), global_batch_size=4, num_steps=20
    )
    assert m.step_counts(4) == {"a": 2, "b": 2, "c": 0}
    with pytest.raises(ValueError, match="weights: the weight of 'b' at step 5 is negative"):
        m.step_counts(5)

    def unknown(step: int) -> dict[str, float]:
        return {"a": 1.0, "z": 1.0} if step == 3 else {"a": 1.0}

    m = MixedDataset(
        _lists(), MixtureSchedule.from_function(unknown), global_batch_size=4, num_steps=20
    )
    with pytest.raises(ValueError, match=r"schedule: the weights at step 3 name \['z'\]"):
        m[13]


def test_a_change_holds_from_its_step_exactly() -> None:
    s = MixtureSchedule(
        {
            0: {"a": 1},
            10: {"a": 1, "b": 1},
            20: {"b": 3, "c": 1},
            25: {"a": 0.3, "b": 0.3, "c": 0.4},
        }
    )
    m = MixedDataset(_lists(), s, global_batch_size=8, num_steps=40)
    got = _counts(m, range(40))
    assert got[:10] == [(8, 0, 0)] * 10
    assert got[10:20] == [(4, 4, 0)] * 10
    assert got[20:25] == [(0, 6, 2)] * 5
    # 0.3 * 8 = 2.4: each step rounds, carrying the error on; over 15 steps 36, 36, 48.
    assert all(sum(c) == 8 for c in got[25:])
    assert tuple(np.sum(got[25:], axis=0)) == (36, 36, 48)
    # Positions follow: step 10 holds exactly four samples of 'a' and four of 'b'.
    names = [m.locate(p)[0] for p in range(80, 88)]
    assert sorted(names) == ["a"] * 4 + ["b"] * 4


def test_at_tokens_places_points_on_steps() -> None:
    s = MixtureSchedule.at_tokens({0: {"a": 1}, 1000: {"b": 1}}, tokens_per_step=300)
    assert s.weights(3) == {"a": 1.0} and s.weights(4) == {"b": 1.0}  # ceil(1000 / 300) = 4


@pytest.mark.parametrize("batch", [7, 16, 100])
def test_long_run_proportions(batch: int) -> None:
    weights = {"a": 0.55, "b": 0.3, "c": 0.15}
    steps = 3000
    m = MixedDataset(_lists(), weights, global_batch_size=batch, num_steps=steps)
    got = np.array(_counts(m, range(steps)))
    assert (got.sum(axis=1) == batch).all()
    for k, w in enumerate(weights.values()):
        # Every prefix of the run is within a sample of its ideal share, per source.
        ideal = w * batch * np.arange(1, steps + 1)
        assert np.abs(np.cumsum(got[:, k]) - ideal).max() < 1.0 + 1e-6
        # And each step within one sample of the weight.
        assert np.abs(got[:, k] - w * batch).max() < 1.0 + 1e-6


def test_linear_interpolation_follows_the_line() -> None:
    s = MixtureSchedule({0: {"a": 1}, 100: {"a": 1, "b": 3}}, interpolate="linear")
    assert s.weights(50) == pytest.approx({"a": 0.625, "b": 0.375})
    assert s.weights(100) == s.weights(5000) == {"a": 0.25, "b": 0.75}
    m = MixedDataset(_lists(), s, global_batch_size=20, num_steps=150)
    got = np.array(_counts(m, range(150)))
    want_b = np.array([s.weights(t).get("b", 0.0) * 20 for t in range(150)])
    assert np.abs(np.cumsum(got[:, 1]) - np.cumsum(want_b)).max() < 1.0 + 1e-6
    assert got[0].tolist() == [20, 0, 0] and got[120].tolist() == [5, 15, 0]


def test_each_source_reads_whole_epochs_in_new_orders() -> None:
    src = _lists(7)
    m = MixedDataset(src, {"a": 1, "b": 3}, global_batch_size=8, num_steps=35, seed=4)
    reads: dict[str, list[Any]] = {"a": [], "b": []}
    for p in range(len(m)):
        name, index = m.locate(p)
        assert m[p] == src[name][index]
        reads[name].append(index)
    for name, got in reads.items():
        epochs = [got[i : i + 7] for i in range(0, len(got) - 6, 7)]
        assert len(epochs) >= 10
        assert all(sorted(e) == list(range(7)) for e in epochs), name
        assert len({tuple(e) for e in epochs}) > 1  # each epoch its own order
    ordered = MixedDataset(src, {"a": 1, "b": 3}, global_batch_size=8, num_steps=2, shuffle=False)
    assert [ordered[p] for p in range(8)] == [0, 1, 1000, 1001, 1002, 1003, 1004, 1005]


def test_the_sequence_depends_on_the_seed_only() -> None:
    def seq(seed: int) -> list[Any]:
        m = MixedDataset(
            _lists(), {"a": 2, "b": 1, "c": 1}, global_batch_size=12, num_steps=20, seed=seed
        )
        return [m[p] for p in range(len(m))]

    assert seq(3) == seq(3)
    assert seq(3) != seq(4)


def _reference(schedule: MixtureSchedule, names: list[str], batch: int, steps: int) -> list[Any]:
    """Step by step, as the counts are defined: quotas, carry restarts, apportion."""
    out: list[Any] = []
    carry, active_before = [0] * len(names), None
    for t in range(steps):
        w = schedule.weights(t)
        quota = quotas([w.get(n, 0.0) for n in names], batch)
        active = [q > 0 for q in quota]
        if active != active_before or schedule.restarts(t):
            carry, active_before = [0] * len(names), active
        counts, carry = apportion(quota, carry, batch)
        out.append(tuple(counts))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_counts_equal_a_step_by_step_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    points: dict[int, dict[str, float]] = {}
    for step in sorted({0, *rng.integers(1, 3000, size=5).tolist()}):
        # Whole-count weights (eighths of a batch of 16) or arbitrary ones, zeros included.
        raw = (
            rng.integers(0, 8, size=3)
            if rng.random() < 0.5
            else rng.random(3) * (rng.random(3) < 0.8)
        )
        raw[rng.integers(0, 3)] += 1
        points[int(step)] = dict(zip("abc", raw.tolist()))
    for mode in ("step", "linear"):
        schedule = MixtureSchedule(points, interpolate=mode)  # type: ignore[arg-type]
        m = MixedDataset(_lists(), schedule, global_batch_size=16, num_steps=3500)
        assert _counts(m, range(3500)) == _reference(schedule, list("abc"), 16, 3500), mode
        before = np.cumsum([(0, 0, 0), *_counts(m, range(3499))], axis=0)
        assert all(m._counts.before(t).tolist() == before[t].tolist() for t in range(0, 3500, 97))


def test_half_sample_shares_alternate() -> None:
    # b and c are due half a sample each per step: they take turns, never one of them twice.
    m = MixedDataset(_lists(), {"a": 2, "b": 1, "c": 1}, global_batch_size=2, num_steps=8)
    assert _counts(m, range(8)) == [(1, 1, 0), (1, 0, 1)] * 4
    s = MixtureSchedule({0: {"a": 2, "b": 1, "c": 1}, 5: {"a": 1, "b": 1}})
    m = MixedDataset(_lists(), s, global_batch_size=2, num_steps=8)
    assert _counts(m, range(8)) == _reference(s, list("abc"), 2, 8)
