"""A process that asks a throttling server for one file ``count`` times, each start taken
from the host's request pace (test_node_pace.py runs two of these side by side).

The pace is fixed at :data:`~streamx.storage.request_pace.FIRST_PACE` for the whole run
(no raises, no quiet doubling, one cut): what the server sees then depends only on whether
the processes take their slots from one clock or from one each.
"""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlparse

from streamx.storage import request_pace

__all__ = ["ask_paced"]


def _hold_the_pace() -> None:
    request_pace.RAISE_FACTOR = 1.0
    request_pace.RAISE_STEP = 0.0
    request_pace.QUIET_S = 1e6


def ask_paced(url: str, directory: str, count: int, start_at: float) -> list[int]:
    """``count`` GETs of ``url`` paced from ``directory``'s clock, from wall time
    ``start_at`` on (so that the processes begin together); the statuses answered."""
    _hold_the_pace()
    request_pace.share_paces(directory)
    parsed = urlparse(url)
    pace = request_pace.pace_for(parsed.netloc)
    time.sleep(max(start_at - time.time(), 0.0))
    pace.throttled(pace.take())  # the store refused: paced at FIRST_PACE from here on
    request_pace.CUT_GAP_S = 1e6  # and never cut again
    statuses = []
    connection = http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=30)
    try:
        for _ in range(count):
            started = pace.take()
            connection.request("GET", parsed.path)
            answer = connection.getresponse()
            answer.read()
            statuses.append(answer.status)
            if answer.status == 503:
                pace.throttled(started)
            else:
                pace.answered(started)
    finally:
        connection.close()
    return statuses
