"""``streamx cp`` never writes outside its destination, never follows a link, and says what it
checked; ``inspect`` and ``verify`` leave nothing in the temp directory (issue 27)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cli_run import run_cli

from streamx import MDSWriter


def _tiny_index(basename: str, size: int) -> bytes:
    shard = {
        "column_encodings": ["bytes"],
        "column_names": ["x"],
        "column_sizes": [None],
        "compression": None,
        "format": "mds",
        "hashes": [],
        "raw_data": {"basename": basename, "bytes": size, "hashes": {}},
        "samples": 1,
        "size_limit": 1 << 20,
        "version": 2,
        "zip_data": None,
    }
    return json.dumps({"version": 2, "shards": [shard]}).encode()


@pytest.mark.remote
def test_cp_refuses_a_remote_split_named_dotdot(s3: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    victim = home / ".bashrc"
    victim.write_text("mine\n")
    payload = b"pwned" * 10
    # A bucket whose listing under ds/ shows a directory "..": its index names ".bashrc".
    s3.put("ds/../index.json", _tiny_index(".bashrc", len(payload)))
    s3.put("ds/../.bashrc", payload)
    s3.put("ds/ok/index.json", _tiny_index("shard.00000.mds", 3))
    s3.put("ds/ok/shard.00000.mds", b"abc")
    done = run_cli("cp", s3.url("ds"), str(home / "copy"))
    assert done.code != 0
    assert "'..'" in done.err
    assert victim.read_text() == "mine\n"
    assert not (home / "copy" / "ok" / "index.json").exists()


def _dataset(root: Path, hashes: list[str] | None = None) -> Path:
    with MDSWriter(out=str(root), columns={"x": "int"}, hashes=hashes or []) as w:
        for i in range(4):
            w.write({"x": i})
    return root


def test_cp_refuses_a_linked_source_file(tmp_path: Path) -> None:
    src = _dataset(tmp_path / "src")
    secret = tmp_path / "secret"
    shard = src / "shard.00000.mds"
    secret.write_bytes(shard.read_bytes())
    shard.unlink()
    shard.symlink_to(secret)
    done = run_cli("cp", str(src), str(tmp_path / "dst"))
    assert done.code != 0
    assert "symbolic link" in done.err and "shard.00000.mds" in done.err
    assert not (tmp_path / "dst" / "shard.00000.mds").exists()


def test_cp_refuses_a_linked_source_split(tmp_path: Path) -> None:
    outside = _dataset(tmp_path / "outside")
    src = tmp_path / "src"
    src.mkdir()
    (src / "train").symlink_to(outside, target_is_directory=True)
    done = run_cli("cp", str(src), str(tmp_path / "dst"))
    assert done.code != 0
    assert "outside" in done.err and "train" in done.err


def test_cp_refuses_a_destination_split_that_links_away(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _dataset(src / "train")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "train").symlink_to(elsewhere, target_is_directory=True)
    done = run_cli("cp", str(src), str(dst))
    assert done.code != 0
    assert "outside" in done.err and "train/" in done.err
    assert os.listdir(elsewhere) == []


def test_cp_says_exactly_what_it_checked(tmp_path: Path) -> None:
    plain = _dataset(tmp_path / "plain")
    done = run_cli("cp", str(plain), str(tmp_path / "a"))
    assert done.code == 0, done.err
    assert "no hashes" in done.out and "hashes verified" not in done.out
    hashed = _dataset(tmp_path / "hashed", ["sha1", "xxh64"])
    done = run_cli("cp", str(hashed), str(tmp_path / "b"), "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["verified"] == {"sizes": 1, "hashes": {"sha1": 1, "xxh64": 1}}
    done = run_cli("cp", str(hashed), str(tmp_path / "c"))
    assert "hashes verified (sha1 on 1 of 1, xxh64 on 1 of 1 files)" in done.out


@pytest.mark.remote
@pytest.mark.parametrize("command", [["inspect"], ["verify"], ["cp"]])
def test_commands_leave_nothing_in_the_temp_dir(
    command: list[str], s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _dataset(tmp_path / "src", ["sha1"])
    for name in os.listdir(src):
        s3.put(f"ds/{name}", (src / name).read_bytes())
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    extra = [str(tmp_path / "out")] if command == ["cp"] else []
    done = run_cli(*command, s3.url("ds"), *extra, process=True, env={"TMPDIR": str(temp)})
    assert done.code == 0, done.err
    left = [os.path.join(r, f) for r, _, fs in os.walk(temp) for f in fs]
    assert left == []
