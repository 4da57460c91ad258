"""docs/simulator.md says what the tool does: the count of differences it announces is the
count it lists, and every flag it names exists."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from streamx.cli.app import app

DOC = Path(__file__).parents[2] / "docs" / "simulator.md"
WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def test_announced_differences_match_the_list() -> None:
    text = DOC.read_text()
    match = re.search(r"differs on purpose in (\w+) places:\n\n((?:[-\s].*\n)+?)\n", text)
    assert match is not None
    bullets = [line for line in match.group(2).splitlines() if line.startswith("- ")]
    assert WORDS[match.group(1)] == len(bullets)


def test_flags_named_in_the_docs_exist() -> None:
    text = DOC.read_text()
    help_text = CliRunner().invoke(app, ["simulate", "--help"], env={"COLUMNS": "200"}).output
    flags: tuple[str, ...] = ("--mosaic-rounding", "--shuffle", "--ui", "--port", "--compare")
    flags += ("--calibrate",)
    flags += ("--tune", "--tolerance", "--price-per-1000", "--connections", "--part-size")
    flags += ("--connection-bandwidth", "--rtt", "--tls-handshake", "--throttled")
    flags += ("--retry-after", "--decompression", "--shards-ahead")
    for flag in flags:
        assert flag in text
        assert flag in help_text
