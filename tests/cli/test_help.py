"""Every command's ``--help``, through the real entry point: no type tags on flags
(``--help <bool>``), and every command offers ``--json``."""

from __future__ import annotations

import pytest
from cli_run import run_cli

COMMANDS = ["inspect", "verify", "cp", "merge-index", "bench", "simulate", "convert"]


@pytest.mark.parametrize("command", ["", *COMMANDS, "cache"])
def test_help_has_no_type_tags_on_flags(command: str) -> None:
    result = run_cli(*([command] if command else []), "--help", process=True)
    assert result.code == 0, result
    assert "<bool>" not in result.out, result.out
    (line,) = [x for x in result.out.splitlines() if x.strip().startswith("--help")]
    assert line.split() == ["--help", "Show", "this", "message", "and", "exit."]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_json(command: str) -> None:
    assert "--json" in run_cli(command, "--help", process=True).out


def test_convert_help_names_its_values() -> None:
    out = run_cli("convert", "--help", process=True).out
    flat = " ".join(out.split())
    for shown in ("-c, --column NAME=ENCODING", "-j, --workers N", "--size-limit SIZE"):
        assert shown in flat, shown
    assert "list[str]" not in out
