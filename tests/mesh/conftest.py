"""The mesh tests serve their remotes with the storage tests' nginx (``nginx_server``)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "storage"))
