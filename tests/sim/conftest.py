"""Simulator tests: the oracle helper on the path, and the storage tests' moto S3 fixtures.

The S3 fixtures are defined once, in ``tests/storage/conftest.py``; it is loaded under the
same module name the remote tests use, so both share one definition.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def _storage_fixtures() -> object:
    name = "_streamx_storage_fixtures"
    if name not in sys.modules:
        path = Path(__file__).parent.parent / "storage" / "conftest.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_fixtures = _storage_fixtures()
moto_endpoint = _fixtures.moto_endpoint  # type: ignore[attr-defined]
s3 = _fixtures.s3  # type: ignore[attr-defined]
