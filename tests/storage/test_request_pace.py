"""The per-host request pace (streamx.storage.request_pace) on its own: how a throttled
answer sets it, how answers raise it, when it lifts, and how it spaces request starts.
The servers' view of the same is in test_throttling.py."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from streamx.storage import request_pace
from streamx.storage.request_pace import FIRST_PACE, LIFT_FACTOR, RequestPace


def _burst(pace: RequestPace, count: int) -> list[float]:
    return [pace.take() for _ in range(count)]


def test_unthrottled_is_unpaced_and_a_cut_sets_half_the_rate_seen() -> None:
    pace = RequestPace("host")
    starts = _burst(pace, 60)  # unpaced: all at once
    assert pace.rate is None
    assert starts[-1] - starts[0] < 0.5
    assert pace.throttled(starts[-1])
    assert pace.rate == 30.0  # 60 starts over the last second, halved


def test_a_process_that_showed_no_rate_starts_at_the_first_pace() -> None:
    pace = RequestPace("host")
    assert pace.throttled(pace.take())
    assert pace.rate == FIRST_PACE


def test_one_cut_per_round_and_not_sooner_than_the_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    pace = RequestPace("host")
    started = pace.take()
    assert pace.throttled(started)
    first = pace.rate
    assert not pace.throttled(started)  # sent before the cut: already answered
    assert not pace.throttled(pace.take())  # within CUT_GAP_S of the cut
    assert pace.rate == first
    monkeypatch.setattr(request_pace, "CUT_GAP_S", 0.0)
    assert pace.throttled(pace.take())
    assert pace.rate == pytest.approx(max(request_pace.MIN_RATE, (first or 0) / 2))


def test_starts_are_spaced_by_the_pace_across_threads() -> None:
    pace = RequestPace("host")
    pace.throttled(pace.take())  # FIRST_PACE: 10 a second
    starts: list[float] = []
    lock = threading.Lock()

    def one() -> None:
        start = pace.take()
        with lock:
            starts.append(start)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    starts.sort()
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(gap == pytest.approx(1 / FIRST_PACE) for gap in gaps)  # slots, not clock reads


def test_waited_answers_raise_it_to_a_cap_and_it_lifts_after_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pace = RequestPace("host")
    pace.throttled(pace.take())
    cap = LIFT_FACTOR * FIRST_PACE
    raised = []
    for _ in range(60):
        started = pace.take()
        pace.answered(started)
        raised.append(pace.rate)
    # Every start after the cut waited for its slot (the first one interval): each raises it.
    assert raised[0] is not None and raised[0] > FIRST_PACE
    assert raised[1] is not None and raised[1] > raised[0]
    assert pace.rate == cap  # capped, not lifted: the host throttled less than 30 s ago
    monkeypatch.setattr(request_pace, "LIFT_QUIET_S", 0.0)
    pace.answered(pace.take())
    assert pace.rate is None


def test_a_pace_nobody_waits_for_doubles_after_quiet_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(request_pace, "QUIET_S", 0.05)
    pace = RequestPace("host")
    pace.throttled(pace.take())
    time.sleep(0.06)
    assert pace.rate == 2 * FIRST_PACE
    time.sleep(0.2)
    assert pace.rate == LIFT_FACTOR * FIRST_PACE  # the cap


def test_the_first_start_after_a_cut_is_one_interval_on() -> None:
    """The store admitted one of the requests that came with the refused one (a store
    without a burst, as nginx's limit_req, refuses anything within an interval of it): the
    next start waits one interval of the new pace, not a whole Retry-After."""
    pace = RequestPace("host")
    _burst(pace, 3)  # a clump, as a calm host's parts or range reads go
    cut = time.monotonic()
    assert pace.throttled(pace.take())
    rate = pace.rate
    assert rate is not None
    assert pace.take() >= cut + 1.0 / rate


def test_a_pace_requests_wait_for_is_not_doubled_when_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The quiet doubling is for a pace nobody waits for; one that requests queue on is
    raised by their answers instead (doubling it sent a burst the store refused)."""
    monkeypatch.setattr(request_pace, "QUIET_S", 0.5)
    pace = RequestPace("host")
    pace.throttled(pace.take())
    pace.take()  # the first start after a cut waits one interval (0.1 s)
    time.sleep(0.45)  # past the first quiet span, in which a request waited
    assert pace.rate == FIRST_PACE
    time.sleep(0.6)  # a span with no wait: doubled
    assert (pace.rate or 0) >= 2 * FIRST_PACE
