"""The metrics table under threads: the first counts of many threads at once (a writer's
parallel uploads) make one table, and none of them dies of SIGBUS or loses a count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_RACE = """
import threading
from streamx.runtime import metrics
start = threading.Barrier(16)
def count():
    start.wait()  # every thread asks for the (not yet made) table at once
    for _ in range(2000):
        metrics.add_request("PUT", 1, 3)
threads = [threading.Thread(target=count) for _ in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
s = metrics.snapshot()
print(s["requests_put"], s["bytes_received"], s["bytes_sent"])
"""


def test_threads_counting_their_first_request_at_once_share_one_table(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "STREAMX_METRICS_DIR"}
    env["TMPDIR"] = str(tmp_path)  # a metrics directory of its own
    # Before the fix, one run in three died of SIGBUS (a second table truncated the file
    # under the first) and most lost counts: several runs make the race likely to show.
    for _ in range(5):
        run = subprocess.run([sys.executable, "-c", _RACE], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["32000", "32000", "96000"]


def test_a_dead_process_counts_do_not_add_into_a_new_one_with_its_pid(tmp_path: Path) -> None:
    directory = tmp_path / "m"
    directory.mkdir(mode=0o700)
    code = (
        "import os\n"
        "from streamx.runtime import metrics\n"
        "stale = os.path.join(os.environ['STREAMX_METRICS_DIR'], f'{os.getpid()}.f64')\n"
        "with open(stale, 'wb') as f:\n"
        "    f.write(b'\\x00\\x00\\x00\\x00\\x00\\x00\\xf0\\x3f' * 17 * 1024)\n"  # every cell 1.0
        "metrics.add_request('GET', 5, 0)\n"
        "s = metrics.snapshot()\n"
        "print(s['requests_get'], s['bytes_received'], s['samples'])\n"
    )
    env = dict(os.environ, STREAMX_METRICS_DIR=str(directory))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1", "5", "0"]
