"""``streamx convert`` through its real entry point (``python -m streamx``): overrides of
columns that inference rejects, ``--json``, a progress bar on a terminal and none on a pipe,
one-line errors."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from cli_run import PYTHONPATH_DIR, assert_one_line_failure, run_cli

from streamx import StreamingDataset

TAGS = [["a", "b"], [], ["ç", "d", "e"], ["x"]]
ADVICE = (
    "Column 'tags' has Arrow type list<item: string>, which no MDS encoding is inferred for; "
    "name one: `-c tags=json` with streamx convert, or overrides={'tags': 'json'} in Python "
    "('json' stores lists and dicts of plain values, 'pkl' any Python value)."
)


@pytest.fixture
def tags_jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": i, "tags": t}) + "\n" for i, t in enumerate(TAGS)))
    return path


def test_without_override_the_advice_is_the_error_line(tags_jsonl: Path, tmp_path: Path) -> None:
    result = run_cli("convert", str(tags_jsonl), str(tmp_path / "out"), process=True)
    assert_one_line_failure(result)
    assert result.err.strip() == f"error: {ADVICE}"


@pytest.mark.parametrize("encoding", ["json", "pkl"])
def test_column_flag_reaches_the_rejected_column(
    tags_jsonl: Path, tmp_path: Path, encoding: str
) -> None:
    out = tmp_path / "out"
    result = run_cli(
        "convert", str(tags_jsonl), str(out), "-c", f"tags={encoding}", "--json", process=True
    )
    assert result.code == 0, result
    report = json.loads(result.out)
    assert set(report) == {"out", "parts", "skipped", "samples", "columns"}
    assert report["columns"] == {"id": "int64", "tags": encoding}
    assert (report["samples"], report["parts"], report["skipped"]) == (len(TAGS), 1, 0)
    dataset = StreamingDataset(local=str(out), batch_size=1, allow_unsafe_types=True)
    assert [dataset[i]["tags"] for i in range(len(dataset))] == TAGS


def test_str_flag_reaches_the_column(tags_jsonl: Path, tmp_path: Path) -> None:
    result = run_cli(
        "convert", str(tags_jsonl), str(tmp_path / "out"), "-c", "tags=str", process=True
    )
    assert_one_line_failure(result, f"{tags_jsonl}, row 0: column 'tags' (str) cannot store")
    assert "inferred" not in result.err


def test_no_progress_bar_on_a_pipe(tags_jsonl: Path, tmp_path: Path) -> None:
    """stderr is a pipe here: no bar, no carriage returns; stdout has the one final line."""
    out = tmp_path / "out"
    result = run_cli(
        "convert", str(tags_jsonl), str(out), "-c", "tags=json", "-j", "2", process=True
    )
    assert result.code == 0, result
    assert result.err == ""
    assert result.out.splitlines() == [
        f"Wrote {len(TAGS)} samples in 1 parts (0 already done) to {out}; "
        "columns {'id': 'int64', 'tags': 'json'}."
    ]


def test_a_progress_bar_on_a_terminal(tags_jsonl: Path, tmp_path: Path) -> None:
    """stderr is a terminal (a pty here): the bar shows there, drawn over itself, and stdout
    still has the one final line."""
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (PYTHONPATH_DIR, os.environ.get("PYTHONPATH", "")) if p
    )
    leader, follower = pty.openpty()
    # A new pty has no size: give it a terminal's 24 x 100 so the bar has room.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        ran = subprocess.run(
            [
                sys.executable,
                "-m",
                "streamx",
                "convert",
                str(tags_jsonl),
                str(out),
                *("-c", "tags=json"),
            ],
            stdout=subprocess.PIPE,
            stderr=follower,
            env=env,
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the pty's other end is closed and drained
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert ran.returncode == 0
    assert ran.stdout.decode().startswith(f"Wrote {len(TAGS)} samples in 1 parts")
    bar = drawn.decode(errors="replace")
    assert "Converting" in bar and "1/1" in bar and "\r" in bar, bar
