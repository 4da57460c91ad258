"""Fixtures for ``dbfs:`` tests: a stand-in workspace on loopback (``workspace_server.py``)
that the real Databricks SDK talks to over HTTP, found by the SDK through the
``DATABRICKS_HOST`` and ``DATABRICKS_TOKEN`` this sets."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from workspace_server import WorkspaceServer

TOKEN = "dapi-test-token"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkspaceServer]:
    """A workspace holding nothing yet; the SDK is pointed at it and nowhere else."""
    from streamx.storage import filesystems

    for name in [n for n in os.environ if n.startswith(("DATABRICKS_", "ARM_", "GOOGLE_"))]:
        monkeypatch.delenv(name)
    # No profile of the machine's user may add or change settings.
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "no-databrickscfg"))
    # Each request waits at most 5 s for the server, and transient failures are retried for
    # 5 s (the tests of a stalled server set 1 s: see `short_timeouts`).
    monkeypatch.setenv("STREAMX_DATABRICKS_HTTP_TIMEOUT", "5")
    monkeypatch.setenv("STREAMX_DATABRICKS_RETRY_TIMEOUT", "5")
    root = tmp_path / "workspace"
    root.mkdir()
    with WorkspaceServer(root, TOKEN) as server:
        monkeypatch.setenv("DATABRICKS_HOST", server.host)
        monkeypatch.setenv("DATABRICKS_TOKEN", TOKEN)
        filesystems.clear_cache()
        yield server
    filesystems.clear_cache()


@pytest.fixture
def short_timeouts(workspace: WorkspaceServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests wait 1 s for the server and are retried for 1 s, from the next client on."""
    from streamx.storage import filesystems

    monkeypatch.setenv("STREAMX_DATABRICKS_HTTP_TIMEOUT", "1")
    monkeypatch.setenv("STREAMX_DATABRICKS_RETRY_TIMEOUT", "1")
    filesystems.clear_cache()
