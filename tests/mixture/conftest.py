"""MDS sources of token documents for the mixture tests, and the packing tests' helpers
(``rank_runs``, ``packing_docs``) on ``sys.path``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "packing"))
sys.path.insert(0, os.path.dirname(__file__))

from mixture_data import write_sources


@pytest.fixture(scope="session")
def sources_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``web`` (120 documents), ``code`` (40) and ``math`` (9), one MDS directory each."""
    root = tmp_path_factory.mktemp("mixture")
    write_sources(root, {"web": 120, "code": 40, "math": 9})
    return root
