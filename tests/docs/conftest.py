"""Fixtures for the documentation tests: the storage tests' moto S3 server."""

from __future__ import annotations

from storage_fixtures import load_storage_fixtures  # tests/, on the path

moto_endpoint = load_storage_fixtures().moto_endpoint  # type: ignore[attr-defined]
