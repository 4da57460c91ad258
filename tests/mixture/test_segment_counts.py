"""A schedule of held points counted by segment: every step's counts and running totals
equal the step-by-step carry rule's, a resume anywhere needs no walk over the steps before
it (10^10 samples under a memory limit), and the state's fingerprint tells a schedule that
changed before the resume point from one that changes only after it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from streamx import MixedDataset, MixtureSchedule
from streamx.mixture.counts import StepCounts
from streamx.mixture.segment_counts import SegmentCounts

NAMES = ["a", "b", "c"]


def _random_points(rng: np.random.Generator, batch: int) -> dict[int, dict[str, float]]:
    points: dict[int, dict[str, float]] = {}
    for step in sorted({0, *rng.integers(1, 1500, size=4).tolist()}):
        raw = rng.random(3) * (rng.random(3) < 0.8)
        if rng.random() < 0.3:  # whole samples per step: no carry at all
            raw = rng.integers(0, batch, size=3).astype(float)
        raw[rng.integers(0, 3)] += 1
        points[int(step)] = dict(zip(NAMES, raw.tolist()))
    return points


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("batch", [7, 64, 1000])
def test_segments_count_as_the_carry_rule_does(seed: int, batch: int) -> None:
    """Random held points, zero weights and whole-sample weights included; small batches
    give quotas under a sample (counted step by step), large ones the rounded totals."""
    rng = np.random.default_rng(seed * 100 + batch)
    schedule = MixtureSchedule(_random_points(rng, batch))
    points = schedule.held_points()
    assert points is not None
    ours = SegmentCounts(points, NAMES, batch)
    reference = StepCounts(schedule, NAMES, batch, 2000)
    for step in range(2000):
        assert ours.counts(step).tolist() == reference.counts(step).tolist(), step
    for step in [*range(0, 2001, 37), 2000]:  # and asked out of order
        assert ours.before(step).tolist() == reference.before(step).tolist(), step
    fresh = SegmentCounts(points, NAMES, batch)  # a resume: straight to a late step
    assert fresh.before(1999).tolist() == reference.before(1999).tolist()


def test_linear_and_function_schedules_are_not_held() -> None:
    points = {0: {"a": 1.0}, 10: {"a": 1.0, "b": 1.0}}
    assert MixtureSchedule(points).held_points() == [(0, {"a": 1.0}), (10, {"a": 0.5, "b": 0.5})]
    assert MixtureSchedule(points, interpolate="linear").held_points() is None
    assert MixtureSchedule.from_function(lambda step: {"a": 1.0}).held_points() is None


def _mixed(schedule: MixtureSchedule) -> MixedDataset:
    sources = {name: list(range(k * 10_000, k * 10_000 + 900)) for k, name in enumerate(NAMES)}
    return MixedDataset(sources, schedule, global_batch_size=100, num_steps=400)


def test_the_fingerprint_sees_changes_before_the_resume_point_only() -> None:
    first = _mixed(MixtureSchedule({0: {"a": 0.7, "b": 0.3}, 150: {"b": 0.2, "c": 0.8}}))
    state = json.loads(json.dumps(first.state_at(200 * 100 + 17)))
    assert set(state["schedule"]) == {"steps", "segments", "cursors"}
    later = _mixed(
        MixtureSchedule({0: {"a": 0.7, "b": 0.3}, 150: {"b": 0.2, "c": 0.8}, 201: {"a": 1}})
    )
    later.load_state_dict(state)  # a change from step 201 on: the resume point's step
    assert [later[p] for p in range(20_017, 20_100)] == [first[p] for p in range(20_017, 20_100)]
    for changed in (
        {0: {"a": 0.7, "b": 0.3}, 150: {"b": 0.25, "c": 0.75}},
        {0: {"a": 0.7, "b": 0.3}, 120: {"b": 0.2, "c": 0.8}},
    ):
        with pytest.raises(ValueError, match=r"'schedule' differs in the 201 steps before"):
            _mixed(MixtureSchedule(changed)).load_state_dict(state)


def test_states_fingerprinted_step_by_step_still_load() -> None:
    """A state whose counts were hashed step by step (streamx before the segments, or a
    linear schedule's) is checked that way: accepted where the counts agree."""
    schedule = MixtureSchedule({0: {"a": 0.7, "b": 0.3}, 150: {"b": 0.2, "c": 0.8}})
    mixed = _mixed(schedule)
    state = mixed.state_at(20_017)
    sched = dict(state["schedule"])  # type: ignore[call-overload]
    del sched["segments"]
    sched["counts"] = StepCounts(schedule, NAMES, 100, 400).digest(201)
    older = {**state, "schedule": sched}
    resumed = _mixed(schedule)
    resumed.load_state_dict(older)
    assert resumed.position == 20_017
    sched["counts"] = StepCounts(MixtureSchedule({0: {"a": 1}}), NAMES, 100, 400).digest(201)
    with pytest.raises(ValueError, match=r"'schedule' differs in the 201 steps before"):
        resumed.load_state_dict({**state, "schedule": sched})


def test_ten_billion_positions_resume_late_in_bounded_memory() -> None:
    """10^10 positions in global batches of 1,024 (about 10^7 steps), weights that carry a
    rounding error every step: a state near the end loads and reads on under a 3 GiB
    address-space limit with under 1 GiB resident, the same positions as the run that never
    stopped."""
    script = textwrap.dedent(
        """
        import json
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from streamx import MixedDataset, MixtureSchedule

        N = 10**10

        class Documents:
            def __init__(self, n):
                self.n = n

            def __len__(self):
                return self.n

            def __getitem__(self, i):
                return i

        def mixed():
            points = {0: {"web": 0.7, "code": 0.3}, 4_000_000: {"web": 0.2, "code": 0.8}}
            schedule = MixtureSchedule(points)
            sources = {"web": Documents(N // 2), "code": Documents(N // 2)}
            return MixedDataset(sources, schedule, global_batch_size=1024, num_samples=N)

        position = N - 5 * 1024 - 3
        state = json.loads(json.dumps(mixed().state_at(position)))
        resumed = mixed()
        resumed.load_state_dict(state)
        stream = iter(resumed)
        got = [next(stream) for _ in range(2048)]
        whole = mixed()
        print("same", got == [whole[p] for p in range(position, position + 2048)])
        cursors = sum(state["schedule"]["cursors"].values())
        print("cursors", cursors == (position + 1023) // 1024 * 1024)
        with open("/proc/self/status") as status:
            hwm = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
        print("hwm_kib", hwm)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["same"] == "True", done.stdout
    assert lines["cursors"] == "True", done.stdout
    assert int(lines["hwm_kib"]) < 1 << 20, done.stdout
