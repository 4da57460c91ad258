"""A stream's claim on its cache directory (:mod:`streamx.cache.local_claims`) is released,
its file closed and removed, when the claim is collected, also in a reference cycle (where
the collector used to finalize its file first, which warned ``unclosed file``), and at the
exit of a process that still holds it."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from streamx.cache.local_claims import Claim, claim_local


class _Cycle:
    """Holds a claim and itself, so only the cycle collector frees it (as a dataset caught
    in an exception's traceback is freed)."""

    def __init__(self, claim: Claim | None) -> None:
        self.claim = claim
        self.me = self


@pytest.mark.filterwarnings("error::ResourceWarning")
def test_a_claim_collected_in_a_cycle_closes_its_file_unwarned(tmp_path: Path) -> None:
    paths = []
    for number in range(8):
        held = _Cycle(claim_local(str(tmp_path / f"cache{number}"), "s3://bucket/data"))
        assert held.claim is not None
        paths.append(Path(held.claim.path))
        del held
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
    assert not any(path.exists() or path.parent.exists() for path in paths)


def test_a_claim_held_at_exit_is_removed(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        from streamx.cache.local_claims import claim_local
        claim = claim_local({str(tmp_path / "cache")!r}, "s3://bucket/data")
        print(claim.path)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path = Path(done.stdout.strip())
    assert path.name and not path.exists() and not path.parent.exists()
