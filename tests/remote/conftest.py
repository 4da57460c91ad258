"""Fixtures for end-to-end remote tests: the storage tests' loopback servers (a moto S3 server,
a fault-injecting proxy in front of it, a GCS emulator), plus dataset helpers.

The server fixtures are defined once, in ``tests/storage/conftest.py``; this module loads that
file under its own name and re-exports them, so both directories share one definition.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator

import pytest

from storage_fixtures import load_storage_fixtures  # tests/, on the path

sys.path.insert(0, os.path.dirname(__file__))


_fixtures = load_storage_fixtures()
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto: no line per request
moto_endpoint = _fixtures.moto_endpoint
s3 = _fixtures.s3
fault_proxy = _fixtures.fault_proxy
faulty_s3 = _fixtures.faulty_s3
gcs_emulator = _fixtures.gcs_emulator

from s3_bucket import S3  # noqa: E402  (tests/storage: on sys.path once its conftest ran)
from s3_fault_proxy import FaultProxy  # noqa: E402

from streamx.storage import filesystems  # noqa: E402


@pytest.fixture(scope="module")
def module_s3(moto_endpoint: str) -> Iterator[S3]:
    """A bucket shared by one test module (datasets are written once per module); the
    environment points S3 clients straight at moto while the module runs."""
    with pytest.MonkeyPatch.context() as mp:
        _fixtures._aws_env(mp, moto_endpoint)
        yield _fixtures._bucket(moto_endpoint, moto_endpoint)


@pytest.fixture
def via_proxy(
    module_s3: S3, fault_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FaultProxy]:
    """Points S3 clients (streamx's and mosaicml-streaming's) at the fault proxy for one test."""
    monkeypatch.setenv("S3_ENDPOINT_URL", fault_proxy.url)
    filesystems.clear_cache()
    yield fault_proxy
    filesystems.clear_cache()


@pytest.fixture(params=["direct", "s3fs"])
def s3_route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test over both S3 routes: streamx's signed GETs and s3fs's client."""
    monkeypatch.setenv("STREAMX_S3_DIRECT", "1" if request.param == "direct" else "0")
    return str(request.param)
