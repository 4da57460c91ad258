"""A file fetched as ranged GETs in parallel, written in place into one preallocated file.

The calling thread works through the parts itself, first part first, and asks the download
pool for helpers that take the next parts as they free up. Nobody ever waits for a part
that no thread has started, so a busy pool makes a download slower, never stuck. Each part
holds a connection slot for its GET. The file's retry budget and deadline are shared by
its parts (:mod:`~streamx.storage.retry_budget`); once the budget is spent, no more parts
are handed out, and the error is raised once the parts already running have ended (each
within its timeout). A watcher thread looks out for stragglers, which it hedges
(:mod:`~streamx.storage.hedge`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable

from streamx.runtime import metrics
from streamx.storage import cancel, hedge
from streamx.storage.hedge import Part
from streamx.storage.pool import download_pool
from streamx.storage.retry_budget import PERMANENT, RetryBudget, backoff_delay
from streamx.storage.slots import Slots
from streamx.storage.throttle import AdaptiveLimit

__all__ = ["FetchRange", "backoff_delay", "fetch_parts", "split"]

logger = logging.getLogger(__name__)

# fetch(fd, start, length, deadline): writes bytes [start, start + length) of the object at
# the same offsets of fd.
FetchRange = Callable[[int, int, int, float], None]
# done(start): the part at ``start`` is in place.
PartDone = Callable[[int], None]

_WATCH_S = 0.05


def _span(parts: list[Part]) -> int:
    return parts[-1].start + parts[-1].length - parts[0].start


def split(size: int, part: int) -> list[tuple[int, int]]:
    """``(start, length)`` of each part of a ``size``-byte file, in order."""
    return [(start, min(part, size - start)) for start in range(0, size, part)]


def fetch_parts(
    fetch: FetchRange,
    fd: int,
    parts: list[tuple[int, int]],
    *,
    tmp: str,
    budget: RetryBudget,
    slots: Slots,
    limit: AdaptiveLimit,
    done: PartDone | None = None,
    permanent: tuple[type[BaseException], ...] = PERMANENT,
) -> None:
    """Runs ``fetch`` over every part into ``fd`` (the file at ``tmp``), in parallel up to
    what the pool, the slots and the host's limit allow.

    Raises:
        The error of the first part that failed once the file's budget was spent.
    """
    job = _Job(fetch, fd, parts, tmp, budget, (slots, limit), done, permanent)
    hedge.count_parts(len(parts))
    helpers = min(len(parts) - 1, slots.count - 1)
    pool = download_pool()
    for _ in range(max(helpers, 0)):
        try:
            pool.submit(job.work)
        except RuntimeError:  # no thread could start (an address-space limit): go on alone
            break
    if job.hedging:
        # Its own thread: any part's thread, the caller's included, may be the straggler.
        watcher = threading.Thread(target=job.watch, name="streamx-hedge-watch", daemon=True)
        with contextlib.suppress(RuntimeError):  # no thread to spare: no hedging
            watcher.start()
    try:
        job.work()
        job.wait()
    finally:
        job.finish()


class _Job:
    def __init__(
        self,
        fetch: FetchRange,
        fd: int,
        parts: list[tuple[int, int]],
        tmp: str,
        budget: RetryBudget,
        gates: tuple[Slots, AdaptiveLimit],
        done: PartDone | None,
        permanent: tuple[type[BaseException], ...],
    ) -> None:
        self._fetch, self._fd, self._tmp = fetch, fd, tmp
        self._parts = [Part(start, length) for start, length in parts]
        self._budget, self._done, self._permanent = budget, done, permanent
        self._slots, self._limit = gates
        self._next = 0
        self._running = 0
        self._hedges = 0
        self._durations: list[float] = []
        self._error: BaseException | None = None
        self._changed = threading.Condition()
        self.hedging = hedge.hedging_enabled() and len(parts) > hedge.MIN_DONE
        self._finished = False

    def work(self) -> None:
        while True:
            with self._changed:
                if self._error is not None or self._next == len(self._parts):
                    return
                taken = self._take()
                self._running += 1
            part = taken[0] if len(taken) == 1 else Part(taken[0].start, _span(taken))
            try:
                self._one(part)
                if len(taken) > 1:
                    self._merged_done(taken)
            except BaseException as err:
                with self._changed:
                    self._error = self._error or err
            finally:
                with self._changed:
                    self._running -= 1
                    self._changed.notify_all()

    def _take(self) -> list[Part]:
        """The next part, or while the host throttles, the next run of parts as one
        request: the file was split while the host was calm, and a throttling store counts
        requests, not bytes (called with the lock held)."""
        remaining = len(self._parts) - self._next
        last = self._parts[-1]
        most = self._limit.requests_for_files(last.start + last.length - self._parts[0].start)
        count = 1 if most is None else -(-remaining // most)
        taken = self._parts[self._next : self._next + count]
        self._next += count
        return taken

    def _merged_done(self, taken: list[Part]) -> None:
        """Marks each part of a merged request as in place, in order."""
        for part in taken:
            with self._changed:
                part.winner = "original"
            self._complete(part)

    def wait(self) -> None:
        """Returns once no thread may write into the file again and every part is in place.

        Raises:
            The job's first error; OSError naming the first part not in place, if any.
        """
        with self._changed:
            while self._running or self._hedges:
                self._changed.wait()
        if self._error is not None:
            raise self._error
        missing = next((part for part in self._parts if not part.complete), None)
        if missing is not None:  # never a hole taken for bytes, whatever went wrong
            raise OSError(f"{self._budget.url}: bytes {missing.start}+ never came into {self._tmp}")

    def finish(self) -> None:
        with self._changed:
            self._finished = True
            self._changed.notify_all()

    def watch(self) -> None:
        """Hedges stragglers until the job ends (runs on a thread of its own)."""
        with self._changed:
            while not self._finished:
                self._changed.wait(_WATCH_S)
                if self._error is not None:
                    for part in self._parts:  # no use for their bytes now
                        if part.hedge is not None:
                            part.hedge.cancel()
                elif not self._finished:
                    self._watch()

    def _one(self, part: Part) -> None:
        what = f"GET {self._budget.url} bytes {part.start}-{part.start + part.length - 1}"
        try:
            self._budget.run(
                lambda deadline: self._attempt(part, deadline),
                what,
                self._slots,
                self._limit,
                permanent=self._permanent,
            )
        except BaseException:
            with self._changed:
                while part.hedging:  # a hedge still running may yet bring the bytes
                    self._changed.wait()
                if part.winner != "hedge":
                    raise
            self._adopt(part)

    def _attempt(self, part: Part, deadline: float) -> None:
        """One request for ``part`` (none when a hedge has brought it already)."""
        with self._changed:
            if part.winner is not None:
                adopt = part.winner == "hedge"
                part.in_fetch = False
            else:
                part.original, part.in_fetch, part.began = cancel.Scope(), True, time.monotonic()
                adopt = None
        if adopt is not None:
            if adopt:
                self._adopt(part)
            return
        try:
            with cancel.scope(part.original):
                self._fetch(self._fd, part.start, part.length, deadline)
        except Exception:
            with self._changed:
                part.in_fetch = False
                if part.winner != "hedge":
                    raise
            self._adopt(part)  # the hedge won: its bytes go in once this one has stopped
            return
        with self._changed:
            part.in_fetch = False
            won = part.winner is None
            if won:
                part.winner = "original"
                self._durations.append(time.monotonic() - part.began)
                self._limit.observed(part.length, self._durations[-1])
            loser = part.hedge
        if won:
            if loser is not None:
                loser.cancel()
            self._complete(part)
        else:
            self._adopt(part)

    def _watch(self) -> None:
        """Hedges the stragglers among the running parts (called with the lock held)."""
        after = hedge.straggler_after(self._durations)
        if after is None or not self._limit.calm:
            return  # too early to tell, or the host throttles: no extra requests
        now = time.monotonic()
        for part in self._parts:
            if self._hedges >= hedge.MAX_AT_ONCE:
                return
            late = part.in_fetch and now - part.began > after
            if late and part.hedge is None and part.winner is None and hedge.allow_hedge():
                part.hedge, part.hedging = cancel.Scope(), True
                self._hedges += 1
                name = f"streamx-hedge-{part.start}"
                threading.Thread(target=self._hedge, args=(part,), name=name, daemon=True).start()

    def _hedge(self, part: Part) -> None:
        """A hedge's thread: counted in ``_hedges`` (and ``part.hedging``) until its last
        write into the file, so that :meth:`wait` never returns while it may still copy its
        bytes into place, whatever fails."""
        try:
            if self._race(part):
                self._adopt(part)
        except BaseException as err:  # e.g. the record of landed parts could not be written
            with self._changed:
                self._error = self._error or err
        finally:
            with self._changed:
                part.hedging = False  # an original waiting on it finds the bytes in place
                self._hedges -= 1
                self._changed.notify_all()

    def _race(self, part: Part) -> bool:
        """Fetches ``part`` into a scratch file; whether it won with its original stopped
        (then this thread copies it into place; else the original's thread does)."""
        metrics.add_hedged()
        path = hedge.scratch_path(self._tmp, part.start)
        fd: int | None = None
        won = original_running = False
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            assert part.hedge is not None
            with self._slots.hold(), cancel.scope(part.hedge):
                deadline = time.monotonic() + self._budget.timeout
                self._fetch(fd, part.start, part.length, deadline)
            with self._changed:
                won = part.winner is None
                if won:
                    part.winner, part.scratch_fd, part.scratch = "hedge", fd, path
                    original_running = part.in_fetch
        except Exception as err:
            logger.debug("hedged GET of %s at %d failed: %r", self._budget.url, part.start, err)
        finally:
            if fd is not None and not won:
                _drop(fd, path)
        if won:
            logger.info("%s: a hedged GET brought bytes %d+ first", self._budget.url, part.start)
            if original_running:
                part.original.cancel()  # its thread adopts the hedge's bytes once stopped
        return won and not original_running

    def _adopt(self, part: Part) -> None:
        """Copies the winning hedge's bytes into place, once (the original has stopped).
        Whichever thread takes the scratch file copies it; a failed copy fails the job."""
        with self._changed:
            if part.complete or part.scratch_fd is None:
                return
            fd, path, part.scratch_fd = part.scratch_fd, part.scratch, None
        try:
            hedge.copy_range(fd, self._fd, part.start, part.length)
        except BaseException as err:
            with self._changed:
                self._error = self._error or err
            return
        finally:
            _drop(fd, path)
        self._complete(part)

    def _complete(self, part: Part) -> None:
        with self._changed:
            if part.complete:
                return
            part.complete = True
        if self._done is not None:
            self._done(part.start)


def _drop(fd: int, path: str | None) -> None:
    os.close(fd)
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
