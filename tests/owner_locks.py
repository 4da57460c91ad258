"""Whether a ledger owner file is held: for tests that check which owners' files a pass
leaves behind."""

from __future__ import annotations

import fcntl
from pathlib import Path


def is_held(path: Path) -> bool:
    """Whether a live process holds the owner file's lock (a fresh open of ours conflicts
    with any other open file's lock, our own process's included)."""
    with path.open("rb") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
