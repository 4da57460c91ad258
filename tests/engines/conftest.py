"""Fixtures for the engine converters: a Ray and a Dask local cluster, and the storage
tests' moto S3 server (loaded from ``tests/storage/conftest.py`` under its own name, as
``tests/remote`` does).

Each engine's tests live in one module, and its cluster is module-scoped: it starts once, on
the first test that asks for it, and stops as soon as that module is done, so no engine
process idles through the Spark tests or outlives this directory. The AWS variables point at
moto before a cluster starts, because engine workers read them when they are spawned.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from storage_fixtures import load_storage_fixtures  # tests/, on the path

sys.path.insert(0, os.path.dirname(__file__))


_fixtures = load_storage_fixtures()
logging.getLogger("werkzeug").setLevel(logging.ERROR)
moto_endpoint = _fixtures.moto_endpoint
s3 = _fixtures.s3


@pytest.fixture(scope="module")
def engine_env(moto_endpoint: str) -> Iterator[str]:
    """The AWS variables point at moto for a module's tests (and its engine's workers)."""
    with pytest.MonkeyPatch.context() as mp:
        _fixtures._aws_env(mp, moto_endpoint)
        yield moto_endpoint


@pytest.fixture(scope="module")
def engine_s3(engine_env: str) -> Any:
    """A bucket for one module."""
    return _fixtures._bucket(engine_env, engine_env)


@pytest.fixture(scope="module")
def ray_cluster(engine_env: str) -> Iterator[None]:
    """A Ray local cluster with 2 CPUs, in this process."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def dask_client(engine_env: str) -> Iterator[Any]:
    """A Dask local cluster of 2 single-threaded worker processes, and its client."""
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    import dask

    # Dask turns object columns (bytes, lists) into strings unless told not to.
    with (
        dask.config.set({"dataframe.convert-string": False}),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client
