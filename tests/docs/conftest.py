"""Fixtures for the documentation tests: the storage tests' moto S3 server."""

from __future__ import annotations

import importlib.util
import os
import sys

_STORAGE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "storage")


def _load_storage_fixtures() -> object:
    name = "_streamx_storage_fixtures"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(_STORAGE, "conftest.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


moto_endpoint = _load_storage_fixtures().moto_endpoint  # type: ignore[attr-defined]
