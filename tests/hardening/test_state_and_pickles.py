"""Leftovers under the per-user state root, and code run by unpickling a local dataset."""

from __future__ import annotations

import gc
import os
import pickle
from pathlib import Path

import pytest

import streamx
from streamx.runtime import run_dirs


def test_empty_state_directories_do_not_accumulate(tmp_path: Path) -> None:
    for i in range(5):
        out = tmp_path / f"ds{i}"
        with streamx.MDSWriter(out=str(out), columns={"id": "int"}) as writer:
            for j in range(4):
                writer.write({"id": j})
        ds = streamx.StreamingDataset(local=str(out), batch_size=2)
        assert sorted(int(s["id"]) for s in ds) == [0, 1, 2, 3]
        del ds
        gc.collect()
    root = run_dirs.user_root()
    digests = [n for n in os.listdir(root) if len(n) == 16]
    # Each dataset's base is removed once empty, when the next one starts: one at most stays.
    empty = [d for d in digests if not os.listdir(os.path.join(root, d, "runs"))]
    assert len(empty) <= 1, empty


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
