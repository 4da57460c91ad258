"""Waits that fail a test instead of blocking it: a hang in the code under test shows as
an assertion after a generous bound, never as a suite that stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["wait_until", "within_bound"]

T = TypeVar("T")

# Generous: the bounds under test are seconds; a hang would be forever.
BOUND_S = 60.0


def wait_until(what: Callable[[], bool], seconds: float = BOUND_S) -> None:
    """Polls ``what`` until it holds; fails after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, f"not so after {seconds} s"
        time.sleep(0.01)


def within_bound(call: Callable[[], T], seconds: float = BOUND_S) -> T:
    """``call()``, run on a thread that must end within ``seconds``; its error is raised
    here."""
    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as err:
            errors.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    if errors:
        raise errors[0]
    return result[0]
