"""``run_dirs.collect_empty``: the empty ``<digest>/runs`` bases under the user root that
nobody used for a while are removed, a few per call; a base used lately (its dataset is
likely built again soon), a live one and the caller's own are kept. Removing an empty
directory costs milliseconds on ext4, so a build no longer removes (and the next one
remakes) every other recent base."""

from __future__ import annotations

import os
import time
from pathlib import Path

from streamx.runtime import run_dirs


def _base(root: Path, index: int, *, age_s: float = 0.0, live: bool = False) -> str:
    name = f"{index:016x}"
    runs = root / name / "runs"
    runs.mkdir(parents=True)
    if live:
        (runs / "123-abc").mkdir()
    when = time.time() - age_s
    os.utime(runs, (when, when))
    return name


def test_only_bases_unused_for_a_while_are_removed(tmp_path: Path) -> None:
    _base(tmp_path, 1, age_s=3600)  # removed
    recent = _base(tmp_path, 2, age_s=5)
    live = _base(tmp_path, 3, age_s=3600, live=True)
    mine = _base(tmp_path, 4, age_s=3600)
    (tmp_path / "not-a-digest").mkdir()
    run_dirs.collect_empty(str(tmp_path), keep=mine)
    assert sorted(os.listdir(tmp_path)) == sorted([recent, live, mine, "not-a-digest"])
    assert os.listdir(tmp_path / live / "runs") == ["123-abc"]


def test_a_call_removes_a_few_and_the_next_calls_the_rest(tmp_path: Path) -> None:
    names = {_base(tmp_path, i, age_s=3600) for i in range(10)}
    run_dirs.collect_empty(str(tmp_path), keep="")
    left = set(os.listdir(tmp_path))
    assert 0 < len(names - left) < len(names)
    for _ in range(len(names)):
        run_dirs.collect_empty(str(tmp_path), keep="")
    assert os.listdir(tmp_path) == []
