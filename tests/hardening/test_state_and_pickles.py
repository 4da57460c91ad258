"""Leftovers under the per-user state root, and code run by unpickling a local dataset."""

from __future__ import annotations

import gc
import os
import pickle
import tempfile
import time
from pathlib import Path

import pytest

import streamx
from streamx.runtime import run_dirs


def test_empty_state_directories_do_not_accumulate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # a user root of its own
    (tmp_path / "tmp").mkdir()

    def build(i: int) -> None:
        out = tmp_path / f"ds{i}"
        if not out.exists():
            with streamx.MDSWriter(out=str(out), columns={"id": "int"}) as writer:
                for j in range(4):
                    writer.write({"id": j})
        ds = streamx.StreamingDataset(local=str(out), batch_size=2)
        assert sorted(int(s["id"]) for s in ds) == [0, 1, 2, 3]
        del ds
        gc.collect()

    for i in range(5):
        build(i)
    root = run_dirs.user_root()

    def empty() -> list[str]:
        digests = [n for n in os.listdir(root) if len(n) == 16]
        return [d for d in digests if not os.listdir(os.path.join(root, d, "runs"))]

    assert len(empty()) == 5  # used a moment ago: kept for the next build over them
    old = time.time() - 3600
    for name in empty():
        os.utime(os.path.join(root, name, "runs"), (old, old))
    build(0)  # collects the bases unused for a while (a few a build)
    build(1)
    assert len(empty()) <= 2, empty()  # only the two just used are left


class _Payload:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch " + os.environ["STREAMX_PWNED"],))


def test_local_dataset_refuses_pkl_without_opt_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pwned"
    monkeypatch.setenv("STREAMX_PWNED", str(marker))
    out = tmp_path / "ds"
    with streamx.MDSWriter(out=str(out), columns={"obj": "pkl"}) as writer:
        writer.write({"obj": _Payload()})
    assert not marker.exists()
    with pytest.raises(ValueError, match="unsafe type: pkl"):
        streamx.LocalDataset(str(out))
    assert not marker.exists()
    ds = streamx.LocalDataset(str(out), allow_unsafe_types=True)
    ds[0]
    assert marker.exists()  # the user asked for it
    assert pickle.dumps(1)
