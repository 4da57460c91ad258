"""Fixtures for the command-line tests: real datasets on disk, the storage tests' moto S3
server on 127.0.0.1, and a runner that starts ``python -m streamx`` as a real process."""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TESTS, "remote"))


def _load_storage_fixtures() -> Any:
    name = "_streamx_storage_fixtures"  # the name tests/remote uses: one module, one server
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(_TESTS, "storage", "conftest.py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_fixtures = _load_storage_fixtures()
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto: no line per request
moto_endpoint = _fixtures.moto_endpoint
s3 = _fixtures.s3

import remote_data  # noqa: E402

_PYTHONPATH = os.path.join(os.path.dirname(_TESTS), "python")


@dataclass
class Result:
    """A finished ``streamx`` process."""

    code: int
    out: str
    err: str


def run_cli(*args: str, env: dict[str, str] | None = None, process: bool = False, timeout: float = 120) -> Result:
    """Runs ``streamx ARGS``: in this process through click's runner (fast; the current
    environment applies), or with ``process`` as ``python -m streamx`` in a fresh process
    with this checkout on the path, the way users start it."""
    if not process:
        from typer.testing import CliRunner

        from streamx.cli.app import app

        done = CliRunner(env=env).invoke(app, list(args), catch_exceptions=False)
        return Result(done.exit_code, done.stdout, done.stderr)
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join(p for p in (_PYTHONPATH, full.get("PYTHONPATH", "")) if p)
    ran = subprocess.run(
        [sys.executable, "-m", "streamx", *args],
        capture_output=True, text=True, env=full, timeout=timeout, check=False,
    )
    return Result(ran.returncode, ran.stdout, ran.stderr)


def assert_one_line_failure(result: Result, *needles: str) -> None:
    """A failure: non-zero exit, one ``error:`` line on stderr naming ``needles``, no traceback."""
    assert result.code != 0, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.err
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


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
def s3_dataset(s3: Any, dataset: str) -> Iterator[str]:
    """``dataset`` uploaded to a fresh moto bucket; yields its ``s3://`` URL."""
    for name in sorted(os.listdir(dataset)):
        with open(os.path.join(dataset, name), "rb") as file:
            s3.put(f"ds/{name}", file.read())
    yield s3.url("ds")
