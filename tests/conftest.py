"""Shared fixtures: a clean environment for world detection and tiny datasets."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

_WORLD_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture(autouse=True)
def _single_process_world(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run as one process unless they set the torchrun variables themselves."""
    for name in _WORLD_VARS:
        monkeypatch.delenv(name, raising=False)


def pytest_configure(config: pytest.Config) -> None:
    """mosaicml-streaming leaks about 12 descriptors per dataset; give the oracle room."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
