"""Release checks of the artifacts that `make wheels` leaves in dist/.

They run only when ``STREAMX_DIST`` names that folder (`make release-check` sets it), so the
fast `make test` reports them as skipped. Each install happens in a fresh virtual environment
with nothing from this checkout on ``sys.path``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from release_env import Artifacts, find_artifacts


@pytest.fixture(scope="session")
def artifacts() -> Artifacts:
    """The x86_64 and aarch64 wheels and the sdist in ``$STREAMX_DIST``."""
    dist = os.environ.get("STREAMX_DIST")
    if not dist:
        pytest.skip("release check: run `make release-check` (sets STREAMX_DIST)")
    return find_artifacts(Path(dist))
