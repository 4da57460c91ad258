"""A process forked while another of its threads holds the ledger's lock (a DataLoader
starting its workers while a download thread records a shard) must not inherit the lock: the
child never closes its copy of the descriptor, so it would wait on itself for ever, and the
parent's next call with it.

The forks run in a process of their own, so that a deadlock fails the test instead of
stopping it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

FORKS = 300
HOLDERS = 3  # threads taking the lock: together they hold it most of the time

_FORKER = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    from streamx import _core

    root, forks, holders = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    files = [[os.path.join(root, f"shard{i}")] for i in range(4)]
    ledger = _core.CacheLedger(os.path.join(root, "ledger"), 4, None, files, [[10]] * 4)
    stop = threading.Event()
    calls = 0

    def hold_the_lock_often():
        global calls
        while not stop.is_set():
            ledger.sync(0, None)  # takes and releases the ledger's lock
            calls += 1

    threads = [threading.Thread(target=hold_the_lock_often, daemon=True) for _ in range(holders)]
    for thread in threads:
        thread.start()
    hung, failed = [], []
    for number in range(forks):
        pid = os.fork()
        if pid == 0:  # the child: one call that takes the lock, then out
            code = 1
            try:
                ledger.sync(1, None)
                code = 0
            finally:
                os._exit(code)
        deadline = time.monotonic() + 10  # one ledger call: only a hang takes this long
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                if os.waitstatus_to_exitcode(status):
                    failed.append(number)
                break
            if time.monotonic() > deadline:
                hung.append(number)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.002)
    stop.set()
    for thread in threads:
        thread.join()
    states = [ledger.state(0), ledger.state(1)]
    print(json.dumps({"calls": calls, "hung": hung, "failed": failed, "states": states}))
    """
)


def test_children_forked_mid_lock_use_the_ledger(tmp_path: Path) -> None:
    try:
        run = subprocess.run(
            [sys.executable, "-c", _FORKER, str(tmp_path), str(FORKS), str(HOLDERS)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"the forking process deadlocked: {err.stderr!r}") from None
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["calls"] > FORKS  # the threads really was taking the lock during the forks
    assert result["hung"] == [], f"children that waited on an inherited lock: {result['hung']}"
    assert result["failed"] == []
    assert result["states"] == ["remote", "remote"]
