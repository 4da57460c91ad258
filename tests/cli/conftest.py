"""Fixtures for the command-line tests: real datasets on disk, the storage tests' moto S3
server on 127.0.0.1, and a runner that starts ``python -m streamx`` as a real process."""

from __future__ import annotations

import logging
import os
import sys

import pytest

from storage_fixtures import load_storage_fixtures  # tests/, on the path

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TESTS, "remote"))


_fixtures = load_storage_fixtures()
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto: no line per request
moto_endpoint = _fixtures.moto_endpoint
s3 = _fixtures.s3

import remote_data  # noqa: E402
from s3_bucket import S3  # noqa: E402  (tests/storage, on sys.path once its conftest loaded)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    """300 samples, zstd-compressed, sha1 and xxh64 hashes, about 33 shards."""
    out = str(tmp_path_factory.mktemp("cli") / "ds")
    remote_data.write(out, 300)
    return out


@pytest.fixture(scope="module")
def split_dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two splits: ``train`` (uncompressed) and ``val`` (zstd)."""
    root = tmp_path_factory.mktemp("cli") / "splits"
    remote_data.write(str(root / "train"), 100, compression=None)
    remote_data.write(str(root / "val"), 40, first=1000)
    return str(root)


@pytest.fixture
def s3_dataset(s3: S3, dataset: str) -> str:
    """``dataset`` uploaded to a fresh moto bucket; yields its ``s3://`` URL."""
    for name in sorted(os.listdir(dataset)):
        with open(os.path.join(dataset, name), "rb") as file:
            s3.put(f"ds/{name}", file.read())
    return s3.url("ds")
