"""Fixtures for storage tests: a moto S3 server on loopback, a fault proxy in front of it,
and a GCS emulator. Every server is started here; nothing external is used."""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
import types
import uuid
from collections.abc import Iterator

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def _storage_importable_without_extension() -> None:
    """The storage layer never needs the compiled extension. When `streamx._core` is not
    built yet, register a bare `streamx` package so `streamx.storage` still imports."""
    try:
        import streamx  # noqa: F401
    except ImportError:
        spec = importlib.util.find_spec("streamx")
        if spec is None or not spec.submodule_search_locations:
            raise
        for name in [m for m in sys.modules if m == "streamx" or m.startswith("streamx.")]:
            del sys.modules[name]
        package = types.ModuleType("streamx")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["streamx"] = package


_storage_importable_without_extension()

from s3_bucket import S3  # noqa: E402
from s3_fault_proxy import FaultConfig, FaultProxy  # noqa: E402

from streamx.storage import filesystems  # noqa: E402


def _aws_env(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    monkeypatch.setenv("S3_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    filesystems.clear_cache()


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1, for the whole session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _bucket(endpoint: str, moto: str) -> S3:
    import boto3

    # Setup traffic goes straight to moto, never through a fault proxy.
    client = boto3.client(
        "s3",
        endpoint_url=moto,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    bucket = f"b-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return S3(endpoint, bucket, client)


@pytest.fixture
def s3(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3:
    """A fresh bucket; the environment points S3 clients straight at moto."""
    _aws_env(monkeypatch, moto_endpoint)
    return _bucket(moto_endpoint, moto_endpoint)


@pytest.fixture
def fault_proxy(moto_endpoint: str) -> Iterator[FaultProxy]:
    """A fault proxy in front of moto (no faults until the test configures them)."""
    host, port = moto_endpoint.removeprefix("http://").split(":")
    proxy = FaultProxy((host, int(port)), FaultConfig()).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def faulty_s3(moto_endpoint: str, fault_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> S3:
    """A fresh bucket; the environment points S3 clients at the fault proxy."""
    _aws_env(monkeypatch, fault_proxy.url)
    return _bucket(fault_proxy.url, moto_endpoint)


@pytest.fixture
def gcs_emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """gcp-storage-emulator on 127.0.0.1 with an empty in-memory store; yields its URL."""
    server_mod = pytest.importorskip("gcp_storage_emulator.server")
    pytest.importorskip("gcsfs")
    port = _free_port()
    server = server_mod.create_server("127.0.0.1", port, in_memory=True)
    server.start()
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", url)
    monkeypatch.delenv("GCS_KEY", raising=False)
    filesystems.clear_cache()
    yield url
    server.stop()
    filesystems.clear_cache()
