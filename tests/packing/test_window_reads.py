"""A packed window reads its documents in one batch (``__getitems__``: one call into Rust for
a ``StreamingDataset`` or ``LocalDataset``), and packing runs no Python per token: the
Python lines and calls that pack a window are the same for documents 100 times longer."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

from streamx import LocalDataset, MDSWriter, PackedDataset


class BatchOnly:
    """Documents that answer only in batches, counting them."""

    def __init__(self, n: int, length: int) -> None:
        self.n, self.length = n, length
        self.batches: list[int] = []

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Any:
        raise AssertionError(f"document {index} read on its own")

    def __getitems__(self, ids: list[int]) -> list[dict[str, Any]]:
        self.batches.append(len(ids))
        return [{"tokens": np.full(self.length, i, np.int32)} for i in ids]


@pytest.mark.parametrize("mode", ["concat", "best_fit"])
def test_a_window_is_read_in_one_batch(mode: str) -> None:
    docs = BatchOnly(250, 10)
    packed = PackedDataset(docs, seq_len=64, mode=mode, buffer_size=100, shuffle=True)
    got = list(packed)
    assert docs.batches == [100, 100, 50]
    tokens = np.concatenate([s["input_ids"][: s["num_tokens"]] for s in got])
    assert Counter(tokens.tolist()) == dict.fromkeys(range(250), 10)


def test_local_documents_come_through_the_batch(tmp_path: Path) -> None:
    with MDSWriter(out=str(tmp_path), columns={"tokens": "ndarray:int32"}) as writer:
        for i in range(300):
            writer.write({"tokens": np.arange(i % 13 + 1, dtype=np.int32) + i})
    config: dict[str, Any] = {"seq_len": 32, "mode": "best_fit", "buffer_size": 64}
    ours = [s["input_ids"].tolist() for s in PackedDataset(LocalDataset(str(tmp_path)), **config)]

    class OneByOne(LocalDataset):  # no batch: every document through ds[i]
        __getitems__ = None  # type: ignore[assignment]

    alone = [s["input_ids"].tolist() for s in PackedDataset(OneByOne(str(tmp_path)), **config)]
    assert ours == alone and len(ours) > 10


def _python_steps(packed: PackedDataset, window: int) -> Counter[str]:
    """The Python work of packing ``window``: function calls, lines run, and calls into C
    functions from Python."""
    steps: Counter[str] = Counter()

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        steps[event] += 1
        return trace  # trace this frame's lines too

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            steps[event] += 1

    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        sequences = packed.pack_window(window)
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    assert len(sequences) == 4
    return Counter({k: steps[k] for k in ("call", "line", "c_call")})


@pytest.mark.parametrize("mode", ["concat", "best_fit"])
def test_no_python_runs_per_token(mode: str) -> None:
    """64 documents into 4 sequences, of 4 tokens each and of 400: 100 times the tokens,
    the same Python lines and calls (the tokens move in numpy, the bins are chosen in Rust)."""
    short = PackedDataset(BatchOnly(64, 4), seq_len=64, mode=mode, buffer_size=64)
    long = PackedDataset(BatchOnly(64, 400), seq_len=6400, mode=mode, buffer_size=64)
    _python_steps(short, 0), _python_steps(long, 0)  # first calls import and cache
    steps = _python_steps(short, 0)
    assert steps["line"] > 100 and steps["c_call"] > 10
    assert _python_steps(long, 0) == steps
