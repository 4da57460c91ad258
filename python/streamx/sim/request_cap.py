"""A server's request-rate limit met by streamx's downloader, played out request by request.

A store that admits a fixed number of requests per second per client (nginx's ``limit_req``
with its ``rate`` and ``burst``, S3's requests per second per prefix) answers 503 or 429 to
every request past that. What the node then achieves is not the admitted rate: it follows
from how the downloader paces, splits and asks again (:mod:`streamx.storage.request_pace`,
:mod:`streamx.storage.throttle`, :mod:`streamx.storage.parts`), whose rules
:class:`~streamx.sim.paced_host.PacedHost` keeps on the simulated clock:

* a calm host gets a file's parts at once, one thread each; a bucket of ``burst + 1``
  requests refilled at ``rate`` per second refuses all of such a clump but the first few
  (nginx refuses a request that comes less than ``1 / rate`` after the last one it
  admitted, when ``burst`` is 0);
* the first refusal sets a pace on request starts (half the rate seen over the last
  second, at least 10 a second per process), and starts are then evenly spaced, the first
  one interval after the cut (the store has just admitted one of the clump); a refusal
  at least a second after the last cut halves it; answers that waited for their slot raise
  it by a tenth and quiet seconds double it, up to 4 times the first rate;
* the files are the loader's downloads, started by its look-ahead (the first one's too:
  the reader's range read gives way to it), and a request fetched ahead of its reader
  takes only a start slot free when it asks, else asks again once the next one is due, so
  the starts follow the pace as the answers raise it, however many requests queue;
* while paced, a file starting is split into ``sqrt(rate x size / (files x bandwidth))``
  parts (few, large GETs), and parts not yet sent are merged into one GET;
* a refused request's thread sleeps for the ``Retry-After`` plus up to 0.5 s of jitter (or
  the full-jitter backoff without one), holding no connection, and asks again; the limit
  on requests at once halves only when two cuts come within 5 s;
* the reader takes files in order, so the look-ahead moves on only when the oldest file it
  holds is complete.

No closed formula gives the result of these rules together, so :func:`capped_link` plays
them out: a window of ``files`` files fetched at once (the loader's look-ahead), moving on as
its oldest file is complete, until ``total`` files are complete, over a few fixed seeds (the
simulation stays deterministic). A *cold* play starts with a calm host, as a process's
first chunk does: its first shard read by range first (a header read, then a sample read
that comes right after it and is refused, so range reads give way from then on), then the
shard's download, whose first part starts one interval of the new pace later and is
admitted (a cold play without range reads sends a calm clump, refused but for one part,
whose refused parts wait out a ``Retry-After``).
A paced play starts where that leaves the host (at the first pace, a connection's
bandwidth known), as the look-ahead does. The result: the bytes per second after the first
file, what the first file's refusals add to the start, the tries and refusals, and the
GETs per file.
"""

from __future__ import annotations

import functools
import heapq
import math
import random
from collections import deque
from dataclasses import dataclass

from streamx.sim.paced_host import PacedHost

__all__ = ["CapResult", "capped_link"]

# streamx.storage.throttle's waits: Retry-After plus uniform(0, 0.5), or a full-jitter
# backoff from 0.5 s doubling to 20 s.
_JITTER_S = 0.5
_BASE_S = 0.5
_CAP_S = 20.0
_SEEDS = (0, 1, 2)
# Past this many simulated seconds a run stops (a limit far below the demand).
_MOST_S = 3600.0
# Event kinds: a request's start slot is reached; an answer; a refusal; a sleeper wakes; a
# request fetched ahead asks again for a free slot.
_SEND, _DONE, _REFUSED, _WAKE, _ASK = range(5)


@dataclass(frozen=True)
class CapResult:
    """What a node achieves against a request-rate limit (means over the seeds).

    Attributes:
        bytes_per_s: Bytes of completed files per second, after the first file.
        start_delay: Seconds the first file's refusals add to it (its time less one file's
            at ``bytes_per_s``).
        tries: Requests sent, refused ones included (range reads too).
        refused: Requests answered 503/429.
        gets_per_file: Answered GETs per file (parts, merged ones as one).
        reads_gave_way: Whether the first shard's range read was refused (a cold play
            with range reads), so range reads give way from then on.
    """

    bytes_per_s: float
    start_delay: float
    tries: float
    refused: float
    gets_per_file: float
    reads_gave_way: bool = False

    @property
    def throttled_share(self) -> float:
        """The share of requests answered 503/429 (of all tries)."""
        return self.refused / self.tries if self.tries else 0.0


@dataclass(frozen=True)
class _Server:
    rate: float
    burst: int
    rtt: float
    connection_rate: float  # bytes a second of one admitted GET
    retry_after: float | None


class _Bucket:
    """nginx's ``limit_req`` for one key: the requests in excess of the rate, kept (with the
    time) only when a request is admitted; a request that would leave more than ``burst``
    in excess is refused."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self.excess = 0.0
        self.last: float | None = None

    def admit(self, now: float) -> bool:
        if self.last is None:  # the key's first request
            self.last = now
            return True
        excess = max(0.0, self.excess - self.rate * (now - self.last) + 1.0)
        if excess > self.burst + 1e-9:
            return False
        self.excess, self.last = excess, now
        return True


def _wait(tries: int, retry_after: float | None, rng: random.Random) -> float:
    if retry_after is not None:
        return retry_after + rng.uniform(0, _JITTER_S)
    return rng.uniform(0, min(_CAP_S, _BASE_S * 2 ** (tries - 1)))


@dataclass
class _Request:
    file: int
    parts: int  # the file's parts it brings (several once merged)
    size: float
    tries: int = 0
    waited: bool = False  # whether its last try waited for its start slot


@dataclass
class _Outcome:
    seconds: float = 0.0
    first: float = 0.0  # when the first file was complete
    tries: int = 0
    refused: int = 0
    gets: int = 0
    gave_way: bool = False


class _Play:
    """One seed's play (see the module's text)."""

    def __init__(
        self,
        server: _Server,
        host: PacedHost,
        files: int,
        file_bytes: int,
        calm_parts: tuple[int, int],
        total: int,
        seed: int,
        first_alone: bool,
    ) -> None:
        self.server, self.host, self.rng = server, host, random.Random(seed)
        self.bucket = _Bucket(server.rate, server.burst)
        self.files, self.size, self.total = files, float(file_bytes), total
        # A cold process reads its first shard alone; the look-ahead starts after it.
        self.window = 1 if first_alone else files
        # A calm host's part: for a file alone, and for one of ``files`` at once.
        self.alone_part, self.calm_part = (-(-file_bytes // n) for n in calm_parts)
        self.unsent: dict[int, int] = {}  # parts of each window file not yet sent
        self.whole: dict[int, int] = {}  # parts each window file was split into
        self.left: dict[int, int] = {}  # parts of each window file not yet in place
        self.retries: deque[_Request] = deque()
        self.events: list[tuple[float, int, int, _Request, float]] = []
        self.seq = self.running = self.started = self.oldest = self.done = 0
        self.now = 0.0
        self.out = _Outcome()

    def range_reads(self) -> None:
        """The first shard's header read, then its sample read right after it."""
        for _ in range(2):
            started = self.host.take(self.now)
            self.out.tries += 1
            self.now = started + self.server.rtt
            if not self.bucket.admit(started):
                self.out.refused += 1
                self.host.throttled(started, self.now)
                self.out.gave_way = True
                return  # the read gives way to the shard's download

    def run(self) -> _Outcome:
        self._fill()
        while self.done < self.total and self.now < _MOST_S:
            self._send()
            if not self.events:
                break
            self.now, _, kind, request, sent = heapq.heappop(self.events)
            if kind == _SEND:
                self._arrive(request, sent)
            elif kind == _WAKE:
                self.retries.append(request)
            elif kind == _ASK:
                self._ask(request, asked=True)
            elif kind == _REFUSED:
                self.running -= 1
                self.host.throttled(sent, self.now)
                request.tries += 1
                wake = self.now + _wait(request.tries, self.server.retry_after, self.rng)
                self._push(wake, _WAKE, request, sent)
            else:
                self._answered(request, sent)
        self.out.seconds = self.now
        return self.out

    def _start_file(self) -> None:
        """The next file joins the window, split as the host's state says."""
        fetching = 1 + sum(1 for n in self.left.values() if n)
        most = self.host.requests_for_files(self.size, fetching)
        calm = self.alone_part if fetching == 1 else self.calm_part
        part = calm if most is None else max(calm, -(-int(self.size) // most))
        parts = max(-(-int(self.size) // part), 1)
        self.unsent[self.started] = self.whole[self.started] = self.left[self.started] = parts
        self.started += 1

    def _send(self) -> None:
        while self.running < min(int(self.host.limit), self.host.ceiling):
            request = self.retries.popleft() if self.retries else self._next_parts()
            if request is None:
                return
            self.running += 1
            self._ask(request)

    def _ask(self, request: _Request, asked: bool = False) -> None:
        """``request`` takes its start slot, holding its room under the limit meanwhile. As
        one fetched ahead of its reader, only a slot free when it asks, else it asks again
        once the next is due (:meth:`streamx.storage.request_pace.RequestPace.take`): its
        start then follows the pace the answers have raised since, not the pace of the
        moment it was queued."""
        due = self.host.free_at(self.now)
        if due > self.now:
            self._push(due, _ASK, request, due)
            return
        self.out.tries += 1
        slot = self.host.take(self.now, asked)
        request.waited = slot > self.now or asked
        self._push(slot, _SEND, request, slot)

    def _next_parts(self) -> _Request | None:
        """The oldest window file's next part; while the host throttles, the rest of its
        unsent parts merged into as few GETs as a file alone may take."""
        file = next((f for f, n in self.unsent.items() if n), None)
        if file is None:
            return None
        count = 1
        if not self.host.calm(self.now):
            most = self.host.requests_for_files(self.size, 1) or 1
            count = -(-self.unsent[file] // most)
        count = min(count, self.unsent[file])
        self.unsent[file] -= count
        return _Request(file, count, self.size * count / self.whole[file])

    def _arrive(self, request: _Request, sent: float) -> None:
        if self.bucket.admit(self.now):
            took = self.server.rtt + request.size / self.server.connection_rate
            self._push(self.now + took, _DONE, request, sent)
        else:
            self.out.refused += 1
            self._push(self.now + self.server.rtt, _REFUSED, request, sent)

    def _answered(self, request: _Request, sent: float) -> None:
        self.running -= 1
        self.out.gets += 1
        self.host.answered(sent, request.waited, request.size, self.now - sent)
        self.left[request.file] -= request.parts
        # The reader takes files in order, and the look-ahead moves past a file only once
        # it is read: a complete file behind an incomplete one frees no room.
        while self.oldest < self.started and not self.left[self.oldest]:
            for table in (self.left, self.unsent, self.whole):
                del table[self.oldest]
            self.oldest += 1
            self.done += 1
            if self.done == 1:
                self.out.first = self.now
                self.window = self.files
        self._fill()

    def _fill(self) -> None:
        while self.started < min(self.total, self.oldest + self.window):
            self._start_file()

    def _push(self, when: float, kind: int, request: _Request, sent: float) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, self.seq, kind, request, sent))


@functools.lru_cache(maxsize=256)
def capped_link(
    rate: float,
    burst: int,
    connections: int,
    files: int,
    file_bytes: int,
    part: int,
    rtt: float,
    connection_rate: float,
    retry_after: float | None,
    total: int,
    cold: bool = False,
    range_reads: bool = False,
    processes: int = 1,
    alone_part: int = 0,
) -> CapResult:
    """What ``total`` files of ``file_bytes`` bytes achieve, ``files`` at once over
    ``connections`` connections of ``connection_rate`` bytes per second each, against
    ``rate`` requests per second (plus ``burst``), the mean over a few fixed seeds. A calm
    host splits a file into ``part``-byte GETs (``alone_part`` when it is fetched alone, as
    it spreads over every connection; 0: ``part``). ``cold``: the host starts calm (a
    process's first chunk; ``range_reads``: its first shard is read by range first), else
    paced as the first refusal leaves it; ``processes`` keep a pace each.

    Examples:
        >>> cold = capped_link(40.0, 0, 32, 1, 8 << 20, 1 << 20, 0.0, 40e6, 1.0, 8, True)
        >>> cold.refused > 0 and cold.start_delay > 1.0  # a Retry-After waited out
        True
        >>> paced = capped_link(40.0, 0, 32, 4, 8 << 20, 1 << 20, 0.0, 40e6, 1.0, 16)
        >>> paced.refused == 0 and paced.gets_per_file == 1.0  # whole-file GETs
        True
    """
    parts = tuple(max(-(-file_bytes // max(p, 1)), 1) for p in (alone_part or part, part))
    server = _Server(rate, burst, rtt, connection_rate, retry_after)
    total = max(total, 1)
    outs = []
    for seed in _SEEDS:
        host = PacedHost(connections, processes)
        if not cold:
            host.start_paced(connection_rate)
        play = _Play(
            server, host, max(files, 1), file_bytes, (parts[0], parts[1]), total, seed, cold
        )
        if cold and range_reads:
            play.range_reads()
        outs.append(play.run())
    runs = float(len(outs))
    seconds = sum(o.seconds for o in outs) / runs
    first = sum(o.first for o in outs) / runs
    if total > 1 and seconds > first:
        speed = (total - 1) * file_bytes / (seconds - first)
    else:
        speed = total * file_bytes / seconds if seconds else math.inf
    return CapResult(
        speed,
        max(0.0, first - file_bytes / speed),
        sum(o.tries for o in outs) / runs,
        sum(o.refused for o in outs) / runs,
        sum(o.gets for o in outs) / runs / total,
        any(o.gave_way for o in outs),
    )
