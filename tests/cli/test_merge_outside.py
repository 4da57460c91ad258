"""``streamx merge-index`` never writes an index that points at files that are not there
(issue 25 item 8): a partition outside OUT is refused, a nested one gets its whole path."""

from __future__ import annotations

import json
from pathlib import Path

from cli_run import assert_one_line_failure, run_cli

from streamx import MDSWriter, StreamingDataset


def _part(root: Path, n: int) -> Path:
    with MDSWriter(out=str(root), columns={"x": "int"}) as w:
        for i in range(n):
            w.write({"x": i})
    return root


def test_a_partition_outside_out_is_refused_naming_it(tmp_path: Path) -> None:
    inside = _part(tmp_path / "out" / "p0", 2)
    outside = _part(tmp_path / "elsewhere" / "p1", 3)
    done = run_cli("merge-index", str(tmp_path / "out"), str(inside), str(outside))
    assert done.code != 0
    assert_one_line_failure(done)
    assert str(outside / "index.json") in done.err
    assert not (tmp_path / "out" / "index.json").exists()


def test_a_partition_above_out_via_dotdot_is_refused(tmp_path: Path) -> None:
    _part(tmp_path / "p1", 3)
    (tmp_path / "out").mkdir()
    done = run_cli("merge-index", str(tmp_path / "out"), str(tmp_path / "out" / ".." / "p1"))
    assert done.code != 0
    assert "p1" in done.err
    assert not (tmp_path / "out" / "index.json").exists()


def test_nested_partitions_get_their_relative_path(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _part(out / "a" / "p0", 2)
    _part(out / "b" / "p1", 3)
    done = run_cli("merge-index", str(out), str(out / "a" / "p0"), f"file://{out}/b/p1")
    assert done.code == 0, done.err
    merged = json.loads((out / "index.json").read_text())
    names = [s["raw_data"]["basename"] for s in merged["shards"]]
    assert names == ["a/p0/shard.00000.mds", "b/p1/shard.00000.mds"]
    assert all((out / name).is_file() for name in names)
    data = StreamingDataset(local=str(out), batch_size=1)
    assert sorted(int(s["x"]) for s in data) == [0, 0, 1, 1, 2]
