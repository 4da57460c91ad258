"""Retries back off exponentially with full jitter, never in lockstep (issue 26): the waits
of clients failing together are spread over the whole window, which doubles per attempt up
to a cap, and a ``Retry-After`` is honoured first, with jitter on top."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import pytest

from streamx.storage.retry_budget import backoff_delay
from streamx.storage.throttle import throttle_delay

DRAWS = 2_000


@pytest.mark.parametrize(
    ("delay", "ceilings"),
    [
        (backoff_delay, [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0]),
        (lambda n: throttle_delay(n, None), [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 20.0]),
    ],
    ids=["failures", "throttling"],
)
def test_waits_fill_a_window_that_doubles_to_a_cap(
    delay: Callable[[int], float], ceilings: list[float]
) -> None:
    for attempt, ceiling in enumerate(ceilings, start=1):
        waits = [delay(attempt) for _ in range(DRAWS)]
        assert min(waits) >= 0 and max(waits) <= ceiling
        # Spread over the window, not bunched: clients failing together return apart.
        assert min(waits) < 0.05 * ceiling and max(waits) > 0.95 * ceiling
        assert abs(statistics.mean(waits) - ceiling / 2) < 0.05 * ceiling
        assert len(set(waits)) == DRAWS


def test_retry_after_comes_first_with_jitter_on_top() -> None:
    waits = [throttle_delay(3, 7.0) for _ in range(DRAWS)]
    assert min(waits) >= 7.0 and max(waits) <= 7.5
    assert len(set(waits)) == DRAWS
