"""Fixtures for the in-place tests (Parquet files and WebDataset tars): the storage tests'
moto S3 server (loaded from ``tests/storage/conftest.py`` under its own name, as
tests/convert does)."""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from typing import Any

_STORAGE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "storage")
sys.path.insert(0, os.path.dirname(__file__))


def _load_storage_fixtures() -> Any:
    name = "_streamx_storage_fixtures"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(_STORAGE, "conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_fixtures = _load_storage_fixtures()
logging.getLogger("werkzeug").setLevel(logging.ERROR)
moto_endpoint = _fixtures.moto_endpoint
s3 = _fixtures.s3
gcs_emulator = _fixtures.gcs_emulator
