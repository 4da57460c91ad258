"""The storage tests' server fixtures for other test directories.

``tests/storage/conftest.py`` defines the loopback servers (moto's S3 server, the
fault-injecting proxy, the GCS emulator) once. Other directories' conftests re-export them
from the module this loads: the file is executed once, under its own name, so every
directory shares one definition and a session-scoped server is started once.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

__all__ = ["load_storage_fixtures"]

_NAME = "_streamx_storage_fixtures"
_CONFTEST = os.path.join(os.path.dirname(__file__), "storage", "conftest.py")


def load_storage_fixtures() -> ModuleType:
    """``tests/storage/conftest.py`` as a module, loaded on the first call."""
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    spec = importlib.util.spec_from_file_location(_NAME, _CONFTEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    spec.loader.exec_module(module)
    return module
