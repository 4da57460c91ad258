"""``--format``: ``inspect`` and ``verify`` refuse an unknown one alike, naming the choices."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import run_cli


@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_an_unknown_format_is_a_usage_error(command: str, tmp_path: Path) -> None:
    result = run_cli(command, str(tmp_path), "--format", "csv")
    assert result.code == 2, result
    assert "--format must be auto, mds, parquet, wds or litdata: csv" in result.err
