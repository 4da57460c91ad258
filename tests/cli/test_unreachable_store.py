"""A store with no server behind it: each command that reads a dataset fails in one line that
names the URL it could not read (issue 25: a bare ``[Errno 111]`` named nothing)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from cli_run import assert_one_line_failure, run_cli


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["inspect", "verify", "cp"])
def test_a_store_with_no_server_is_named(command: str, tmp_path: Path) -> None:
    remote = f"http://127.0.0.1:{_closed_port()}/bucket/ds"
    args = [command, remote] + ([str(tmp_path / "copy")] if command == "cp" else [])
    result = run_cli(*args, process=True)
    assert_one_line_failure(result, f"Cannot read {remote}", "Cannot connect to host")
    assert not (tmp_path / "copy").exists()
