"""One file's retry budget and deadline, shared by all of its requests.

``download_retry`` and ``download_timeout`` bound a file's download, however many ranged
GETs it takes, as they bound mosaic's one GET per file:

* the deadline: ``retry x timeout`` seconds from the file's first request (and no request
  runs longer than ``timeout``). Time spent waiting out throttling extends it, as far as
  one more ``timeout`` after the wait;
* the attempts: the file may fail ``retry - 1`` times. Parts that fail together (the
  requests in flight when a first one failed) count as one failed attempt of the file, and
  only the failed parts are asked for again.

A throttled answer (:mod:`~streamx.storage.throttle`) is no failed attempt: it is waited
out, up to ``STREAMX_THROTTLE_RETRIES`` tries per request.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from streamx.exceptions import TlsCertificateError
from streamx.runtime import metrics
from streamx.storage.errors import DownloadTimeoutError
from streamx.storage.http_source import plain_target
from streamx.storage.slots import Slots
from streamx.storage.throttle import (
    AdaptiveLimit,
    ThrottledError,
    retry_after_of,
    throttle_delay,
    throttle_retries,
    throttled_status,
)

__all__ = ["PERMANENT", "RetryBudget", "ThrottledError", "backoff_delay"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Errors no retry can fix: a missing or refused object, a certificate that fails verification.
PERMANENT = (FileNotFoundError, PermissionError, TlsCertificateError)
_BACKOFF_BASE_S = 0.25
_BACKOFF_CAP_S = 8.0


def backoff_delay(attempt: int) -> float:
    """Seconds to sleep after failed attempt number ``attempt`` (1-based): exponential with
    full jitter (anywhere from zero to the ceiling, so clients never retry in lockstep)."""
    return random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2 ** (attempt - 1)))


class RetryBudget:
    """The attempts and the deadline of one file's download (see the module's docs)."""

    def __init__(self, url: str, retry: int, timeout: float, *, urgent: bool = True) -> None:
        self.url, self.retry, self.timeout = url, retry, timeout
        self._deadline: float | None = None  # set by the first request
        self._round = 1
        self._lock = threading.Lock()
        self._throttle_tries = throttle_retries()
        # A reader waits for the file (not fetched ahead): its requests take the pace's
        # next slot first (storage.request_pace).
        self._urgent = urgent
        # A plain http(s) URL is read by streamx's HTTP layer, which takes the pace's slot
        # once its connection is ready, from the process's first request on.
        self._connects_first = plain_target(url) is not None

    @property
    def spent(self) -> bool:
        """Whether the file has failed all of its attempts."""
        return self._round > self.retry

    def run(
        self,
        request: Callable[[float], T],
        what: str,
        slots: Slots,
        limit: AdaptiveLimit,
        permanent: tuple[type[BaseException], ...] = PERMANENT,
    ) -> T:
        """``request(deadline)`` under ``limit`` and one of ``slots``, asked again on
        failure or throttling while the budget lasts. ``permanent`` errors are raised at
        once.

        Raises:
            ThrottledError: The server throttled every try.
            DownloadTimeoutError: The file's deadline passed.
            Exception: The last failure once the file's attempts are spent.
        """
        throttled = 0
        failure: Exception | None = None
        while True:
            round_ = self._round
            if failure is not None and self.spent:
                raise failure  # another request of the file spent the budget meanwhile
            # An HTTP request takes its pace slot once connected (hold_until_connected).
            with (
                limit.hold_until_connected(self._urgent, self._connects_first) as ticket,
                slots.hold(),
            ):
                deadline = self._request_deadline(what)
                try:
                    result = request(deadline)
                except permanent:
                    raise
                except Exception as err:
                    status = throttled_status(err)
                    if status is not None:
                        limit.throttled(ticket.take(), status)
                    failure = err
                else:
                    limit.answered(ticket.take())
                    return result
            if status is not None:
                throttled += 1
                _count_throttled()
                if throttled >= self._throttle_tries:
                    raise ThrottledError(self.url, status, throttled) from failure
                delay = throttle_delay(throttled, retry_after_of(failure))
                self._extend(delay)
            else:
                self._failed(round_, failure)
                delay = backoff_delay(self._round - 1)
            logger.info(
                "%s failed (%r); asking again in %.2fs (attempt %d of %d)",
                what,
                failure,
                delay,
                min(self._round, self.retry),
                self.retry,
            )
            time.sleep(delay)

    def _request_deadline(self, what: str) -> float:
        now = time.monotonic()
        with self._lock:
            if self._deadline is None:
                self._deadline = now + self.retry * self.timeout
            deadline = self._deadline
        if deadline <= now:
            raise DownloadTimeoutError(
                f"{what}: {self.url} took over its {self.retry} x {self.timeout}s budget "
                "(download_retry x download_timeout)"
            )
        return min(now + self.timeout, deadline)

    def _extend(self, wait: float) -> None:
        with self._lock:
            if self._deadline is not None:
                self._deadline = max(self._deadline, time.monotonic() + wait + self.timeout)

    def _failed(self, round_: int, err: Exception) -> None:
        """Counts a failed request against the file's attempts; raises ``err`` when spent."""
        with self._lock:
            if round_ == self._round:
                self._round += 1
            if self._round > self.retry:
                raise err


def _count_throttled() -> None:
    metrics.add_throttled()
