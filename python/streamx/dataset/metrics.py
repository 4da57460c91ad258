"""The iteration metrics, at the path the documentation gives.

The counters live in :mod:`streamx.runtime.metrics`, a floor below ``storage`` whose
downloads count into them; this module names the same functions.
"""

from __future__ import annotations

from streamx.runtime.metrics import (
    Snapshot,
    add_download,
    add_hedged,
    add_request,
    add_samples,
    add_throttled,
    begin_epoch,
    dequeued,
    enable_logging,
    epoch_totals,
    queued,
    snapshot,
    stalled,
)

__all__ = [
    "Snapshot",
    "add_download",
    "add_hedged",
    "add_request",
    "add_samples",
    "add_throttled",
    "begin_epoch",
    "dequeued",
    "enable_logging",
    "epoch_totals",
    "queued",
    "snapshot",
    "stalled",
]
