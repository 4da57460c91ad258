"""Fixtures for the converter's tests: the storage tests' moto S3 server (loaded from
``tests/storage/conftest.py`` under its own name, as tests/remote does) and readers."""

from __future__ import annotations

import logging
import os
import sys

from storage_fixtures import load_storage_fixtures  # tests/, on the path

sys.path.insert(0, os.path.dirname(__file__))


_fixtures = load_storage_fixtures()
logging.getLogger("werkzeug").setLevel(logging.ERROR)
moto_endpoint = _fixtures.moto_endpoint
s3 = _fixtures.s3
