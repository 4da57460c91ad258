"""A process's own connection slots and download pool follow
``STREAMX_DOWNLOAD_CONNECTIONS`` (and ``STREAMX_DOWNLOAD_THREADS``) as they are now: a
dataset built after a variable changed gets the new count. Both were kept for the whole
process, so one test's single connection made a later test's first chunk download one shard
at a time."""

from __future__ import annotations

import threading

import pytest

from streamx.storage.download import process_slots


def test_the_slots_follow_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "1")
    one = process_slots()
    assert one.count == 1
    assert process_slots() is one  # kept while the variable stays
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "6")
    six = process_slots()
    assert six.count == 6
    held = [six.hold() for _ in range(6)]
    for slot in held:
        slot.__enter__()  # six requests at once, where the old slots allowed one
    for slot in held:
        slot.__exit__(None, None, None)


def test_a_bad_value_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMX_DOWNLOAD_CONNECTIONS", "zero")
    with pytest.raises(ValueError, match="STREAMX_DOWNLOAD_CONNECTIONS"):
        process_slots()


def test_the_download_pool_follows_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamx.storage.pool import download_pool

    monkeypatch.setenv("STREAMX_DOWNLOAD_THREADS", "1")
    one = download_pool()
    assert download_pool() is one
    monkeypatch.setenv("STREAMX_DOWNLOAD_THREADS", "3")
    three = download_pool()
    assert three is not one
    # Three tasks run at once on the new pool: each waits until all three have started.
    started = threading.Barrier(3, timeout=30)
    waits = [three.submit(started.wait) for _ in range(3)]
    assert sorted(f.result(timeout=60) for f in waits) == [0, 1, 2]
