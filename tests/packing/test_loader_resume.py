"""Exact resume of a ``PackedDataset`` read through real DataLoader workers: the state taken
in the training process counts what that process received (never what the workers packed
ahead of it), and resumes at another worker count or world size (real gloo ranks) with no
sequence repeated or lost. The loader's batches are torch's own; a plain DataLoader is tracked
through ``PackedDataset.tracked_batches``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from rank_runs import run_ranks, tuples
from torch.utils.data import DataLoader

from streamx import LocalDataset, PackedDataset, StreamingDataLoader

CONFIG: dict[str, Any] = {
    "seq_len": 512,
    "mode": "concat",
    "eos_id": 0,
    "buffer_size": 64,
    "shuffle": True,
    "seed": 3,
}
SEQ_KEYS = {"input_ids", "position_ids", "cu_seqlens", "num_tokens"}
Key = tuple[int, ...]


def _key(seq: dict[str, Any]) -> Key:
    return tuple(seq["input_ids"][: int(seq["num_tokens"])].tolist())


def as_list(seqs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A user's collate (``cu_seqlens`` is ragged, so ``default_collate`` cannot stack it);
    it must see the sequences as the dataset made them, without provenance."""
    assert all(seq.keys() == SEQ_KEYS for seq in seqs)
    return seqs


def _keys(batch: Any) -> list[Key]:
    """The sequences of one batch: a sequence, or a list of them."""
    return [_key(batch)] if isinstance(batch, dict) else [_key(seq) for seq in batch]


def _packed(local: Path, config: dict[str, Any]) -> PackedDataset:
    return PackedDataset(LocalDataset(str(local)), **config)


def _loader(packed: PackedDataset, workers: int, batch_size: int | None) -> StreamingDataLoader:
    collate = None if batch_size is None else as_list
    return StreamingDataLoader(
        packed,
        batch_size=batch_size,
        num_workers=workers,
        collate_fn=collate,
        multiprocessing_context="fork" if workers else None,
    )


def _recorded(packed: PackedDataset, state: dict[str, Any]) -> int:
    """Sequences a state counts as handed out."""
    done = sum(
        len(packed.pack_window(w))
        for start, end in PackedDataset.windows_done(state)
        for w in range(start, end)
    )
    return done + sum(int(n) for n in dict(state["partial"]).values())


def test_loader_gives_torch_batches(token_dir: tuple[Path, Any]) -> None:
    local, _ = token_dir
    for batch_size in (None, 3):
        packed = _packed(local, CONFIG)
        ours = [_keys(b) for b in _loader(packed, 2, batch_size)]
        plain = DataLoader(
            _packed(local, CONFIG),
            batch_size=batch_size,
            num_workers=2,
            collate_fn=None if batch_size is None else as_list,
            multiprocessing_context="fork",
        )
        assert ours == [_keys(b) for b in plain], batch_size
        # A whole pass received: every window done, nothing partial.
        assert PackedDataset.windows_done(packed.state_dict()) == [(0, packed.num_windows())]
        assert packed.state_dict()["partial"] == {}


def _same(ours: Any, theirs: Any) -> bool:
    """Equal items, type for type: tensors of the same dtype and values, equal scalars."""
    if type(ours) is not type(theirs):
        return False
    if isinstance(ours, torch.Tensor):
        return bool(ours.dtype == theirs.dtype and torch.equal(ours, theirs))
    if isinstance(ours, dict):
        return ours.keys() == theirs.keys() and all(_same(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, list):
        return len(ours) == len(theirs) and all(map(_same, ours, theirs))
    return bool(ours == theirs)


@pytest.mark.parametrize(
    "extra", [{}, {"mode": "best_fit", "truncate": True, "token_budget": 1500}]
)
def test_items_are_what_torch_converts_in_its_workers(
    token_dir: tuple[Path, Any], extra: dict[str, Any]
) -> None:
    """One item per step: the workers send numpy and this process makes the tensors; the
    items equal a plain DataLoader's, whose workers run ``default_convert`` themselves."""
    local, _ = token_dir
    config = CONFIG | extra
    ours = list(_loader(_packed(local, config), 2, None))
    plain = list(
        DataLoader(
            _packed(local, config), batch_size=None, num_workers=2, multiprocessing_context="fork"
        )
    )
    assert len(ours) == len(plain) > 0
    assert all(map(_same, ours, plain))
    first = ours[0] if isinstance(ours[0], dict) else ours[0][0]
    assert isinstance(first["input_ids"], torch.Tensor)
    assert first["input_ids"].dtype == torch.int64


@pytest.mark.parametrize(
    ("workers", "then", "extra", "batch_size"),
    [
        (3, 1, {}, None),
        (1, 0, {"mode": "best_fit", "truncate": True, "token_budget": 1500}, None),
        (0, 3, {}, 4),
        (3, 3, {"mode": "best_fit", "truncate": True}, 2),
    ],
)
def test_resume_through_workers(
    token_dir: tuple[Path, Any],
    workers: int,
    then: int,
    extra: dict[str, Any],
    batch_size: int | None,
) -> None:
    local, _ = token_dir
    config = {**CONFIG, **extra}
    want = Counter(k for b in _packed(local, config) for k in _keys(b))
    first_packed = _packed(local, config)
    loader = _loader(first_packed, workers, batch_size)
    first: list[Key] = []
    for i, batch in enumerate(loader, 1):
        first += _keys(batch)
        if i == 7:  # the workers have packed ahead (prefetch): the state must not count that
            break
    state = json.loads(json.dumps(loader.state_dict()))
    assert state == json.loads(json.dumps(first_packed.state_dict()))
    assert _recorded(first_packed, state) == len(first)
    assert state["partial"]  # stopped mid-window: a carry-over is pending
    resumed = _loader(_packed(local, config), then, batch_size)
    resumed.load_state_dict(state)
    second = [k for b in resumed for k in _keys(b)]
    assert Counter(first) + Counter(second) == want  # no sequence repeated or lost
    assert len(first) + len(second) == sum(want.values())


def test_state_after_a_break_resumes_in_the_same_process(token_dir: tuple[Path, Any]) -> None:
    local, _ = token_dir
    want = Counter(_key(s) for s in _packed(local, CONFIG))
    loader = _loader(_packed(local, CONFIG), 3, None)
    got: list[Key] = []
    for _ in range(3):  # three partial passes, then the rest: the next pass starts from state
        for i, seq in enumerate(loader, 1):
            got.append(_key(seq))
            if i == 5:
                break
    got += [_key(s) for s in loader]
    assert Counter(got) == want


def test_ranks_with_workers_resume_at_another_world_size(
    token_dir: tuple[Path, Any], tmp_path: Path
) -> None:
    local, _ = token_dir
    want = Counter(_key(s) for s in _packed(local, CONFIG))
    # 2 ranks x 3 workers stop after 5 sequences each; 3 ranks x 1 worker finish the epoch.
    first = run_ranks(local, 2, {**CONFIG, "workers": 3, "stop": 5}, tmp_path, None)
    merged = PackedDataset.merge_states([r["state"] for r in first])
    state = tmp_path / "state.json"
    state.write_text(json.dumps(merged))
    second = run_ranks(local, 3, {**CONFIG, "workers": 1}, tmp_path, state)
    assert sum(len(r["sequences"]) for r in first) == 10
    assert tuples(first) + tuples(second) == want


def test_plain_dataloader_through_tracked_batches(token_dir: tuple[Path, Any]) -> None:
    local, _ = token_dir
    want = Counter(_key(s) for s in _packed(local, CONFIG))
    packed = _packed(local, CONFIG)
    plain = DataLoader(packed, batch_size=None, num_workers=3, multiprocessing_context="fork")
    first: list[Key] = []
    for seq in packed.tracked_batches(plain):
        first.append(_key(seq))
        if len(first) == 8:
            break
    assert _recorded(packed, packed.state_dict()) == 8
    resumed = _packed(local, CONFIG)
    resumed.load_state_dict(packed.state_dict())
    assert Counter(first) + Counter(_key(s) for s in resumed) == want
    with pytest.raises(ValueError, match="another dataset"):
        _packed(local, CONFIG).tracked_batches(plain)
