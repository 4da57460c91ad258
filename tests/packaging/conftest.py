"""Release checks of the artifacts that `make wheels` leaves in dist/.

They carry the ``release`` marker, which the default selection leaves out; `make
release-check` builds the artifacts, names their folder in ``STREAMX_DIST`` and runs them.
Each install happens in a fresh virtual environment with nothing from this checkout on
``sys.path``.
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
        pytest.fail(
            "release check: run `make release-check` (it builds dist/ and sets STREAMX_DIST)"
        )
    return find_artifacts(Path(dist))
