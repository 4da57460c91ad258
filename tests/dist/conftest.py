"""Fixtures for the multi-process tests: one small MDS dataset, copied per simulated node."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from dist_harness import NUM_SAMPLES


@pytest.fixture(scope="session")
def mds_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About ten shards of ``{'id': int}`` samples, ids 0..NUM_SAMPLES-1."""
    import streamx

    out = tmp_path_factory.mktemp("dist_src") / "data"
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=1200) as writer:
        for i in range(NUM_SAMPLES):
            writer.write({"id": i})
    return out


@pytest.fixture
def node_dirs(mds_source: Path, tmp_path: Path) -> Callable[[int], list[str]]:
    """``node_dirs(n)``: n fresh copies of the dataset, one cache directory per node."""

    def make(count: int, prefix: str = "node") -> list[str]:
        dirs = []
        for node in range(count):
            path = tmp_path / f"{prefix}{node}"
            if not path.exists():
                shutil.copytree(mds_source, path, ignore=shutil.ignore_patterns(".streamx"))
            dirs.append(str(path))
        return dirs

    return make
