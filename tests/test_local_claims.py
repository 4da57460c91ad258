"""One cache directory per remote among live streams: a claim held by another (real) process
blocks a different remote until that process dies; the same remote may share it."""

from __future__ import annotations

import os
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


def test_a_process_leaves_no_claim_nor_claims_directory_at_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that exits with its claims held (a dataset alive at exit) removes them and
    their directories: runs over fresh local directories leave nothing behind. A claim
    another live process holds in the same directory stays, and so does its directory."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # the processes' user_root
    claims = tmp_path / "tmp" / f"streamx-{os.getuid()}" / "claims"
    code = textwrap.dedent(
        """
        import sys
        from streamx.cache.local_claims import claim_local
        kept = [claim_local(path, "s3://a/x/") for path in sys.argv[1:]]
        """
    )
    proc = _holder(tmp_path / "shared", "s3://a/x/")
    try:
        locals_ = [str(tmp_path / f"run{n}") for n in range(3)] + [str(tmp_path / "shared")]
        subprocess.run([sys.executable, "-c", code, *locals_], check=True)
        left = {p.name: sorted(f.name for f in p.iterdir()) for p in claims.iterdir()}
        assert len(left) == 1, left  # only the live holder's directory
        assert [name.split("-")[0] for name in next(iter(left.values()))] == [str(proc.pid)]
    finally:
        proc.kill()
        proc.wait()
