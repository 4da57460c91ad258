"""The cache tests serve their remotes with the storage tests' nginx (``nginx_server``) and
write large indexes with the format tests' ``big_index``."""

from __future__ import annotations

import os
import sys

_TESTS = os.path.dirname(os.path.dirname(__file__))
sys.path.insert(0, os.path.join(_TESTS, "storage"))
sys.path.insert(0, os.path.join(_TESTS, "format"))
