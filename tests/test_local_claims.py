"""One cache directory per remote among live streams: a claim held by another (real) process
blocks a different remote until that process dies; the same remote may share it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from streamx.cache.local_claims import claim_local


def _holder(local: Path, remote: str) -> subprocess.Popen[str]:
    code = textwrap.dedent(
        f"""
        import sys, time
        from streamx.cache.local_claims import claim_local
        claim = claim_local({str(local)!r}, {remote!r})
        print("held", flush=True)
        time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_other_process_claim_blocks_another_remote_until_it_dies(tmp_path: Path) -> None:
    local = tmp_path / "cache"
    proc = _holder(local, "s3://a/x/")
    try:
        with pytest.raises(ValueError, match="Reused local directory.*s3://a/x/"):
            claim_local(str(local), "s3://b/y/")
        same = claim_local(str(local), "s3://a/x/")
        assert same is not None
        same.close()
    finally:
        proc.kill()
        proc.wait()
    # Its owner is dead: the stale claim is collected and the directory is free.
    other = claim_local(str(local), "s3://b/y/")
    assert other is not None
    with pytest.raises(ValueError, match="Reused local directory"):
        claim_local(str(local), "s3://a/x/")
    other.close()
    again = claim_local(str(local), "s3://a/x/")
    assert again is not None
    again.close()
