"""Another process's download is watched by its own temporary file: a hedge's scratch file
beside it (unlocked, quiet while its GET waits for a first byte) says nothing of the owner."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from streamx.cache.download_watch import DownloadWatch
from streamx.storage import hedge

_PYTHON = str(Path(__file__).resolve().parents[2] / "python")

# A live downloader: owns (creates and locks) its temporary file as download_file does and
# writes into it every 50 ms, as a download whose parts progress.
_OWNER = textwrap.dedent(
    """
    import os, sys, time
    from streamx.storage import download
    tmp = download.temp_path_for(sys.argv[1])
    download._own(tmp)
    fd = os.open(tmp, os.O_WRONLY)
    print(tmp, flush=True)
    while True:
        os.write(fd, b"x" * 4096)
        time.sleep(0.05)
    """
)


def test_a_quiet_hedge_scratch_file_is_no_stall_of_a_live_download(tmp_path: Path) -> None:
    local = str(tmp_path / "shard.00000.mds")
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, local],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": _PYTHON},
    )
    try:
        assert owner.stdout is not None
        tmp = owner.stdout.readline().strip()
        time.sleep(0.1)
        # The hedge of a straggling part: its scratch file, newer than the last write.
        scratch = hedge.scratch_path(tmp, 5 << 20)
        with open(scratch, "wb"):
            pass
        # Another file whose name starts like the shard's: its temporary is not this one's.
        other = tmp_path / f".shard.00000.mds.zstd.{owner.pid}.0123abcd.tmp"
        other.write_bytes(b"")
        # Newest at the watch's first look, however loaded the machine (the owner writes
        # every 50 ms): stamped a little ahead.
        ahead = time.time() + 0.2
        os.utime(scratch, (ahead, ahead))
        watch = DownloadWatch()
        verdicts = [watch.stalled(local)]
        for _ in range(6):  # past a few owner checks (every 0.25 s)
            time.sleep(0.3)
            verdicts.append(watch.stalled(local))
        assert owner.poll() is None
        assert verdicts == [False] * 7  # its owner lives and writes
    finally:
        owner.kill()
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
    # Once the owner is killed, the same watch tells.
    time.sleep(0.3)
    assert watch.stalled(local)
