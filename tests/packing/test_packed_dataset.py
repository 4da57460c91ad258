"""``PackedDataset`` over a real MDS dataset: the same packed sequences whatever the DataLoader
worker count or the world size (real processes on gloo), exact resume at another world size,
and clear errors for bad arguments and foreign state dicts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rank_runs import run_ranks, tuples
from torch.utils.data import DataLoader

from streamx import LocalDataset, PackedDataset

CONFIG: dict[str, Any] = {
    "seq_len": 512,
    "mode": "best_fit",
    "buffer_size": 64,
    "shuffle": True,
    "seed": 3,
    "truncate": True,
}


def _key(seq: dict[str, Any]) -> tuple[int, ...]:
    return tuple(seq["input_ids"][: int(seq["num_tokens"])].tolist())


def _all(local: Path, **config: Any) -> list[tuple[int, ...]]:
    return [_key(s) for s in PackedDataset(LocalDataset(str(local)), **config)]


@pytest.mark.parametrize("mode", ["concat", "best_fit"])
def test_same_sequences_for_any_worker_count(token_dir: tuple[Path, Any], mode: str) -> None:
    local, _ = token_dir
    config = {**CONFIG, "mode": mode}
    want = _all(local, **config)
    for workers in (1, 3):
        loader = DataLoader(
            PackedDataset(LocalDataset(str(local)), **config),
            batch_size=None,
            num_workers=workers,
            multiprocessing_context="fork",
        )
        got = [_key(s) for s in loader]
        assert Counter(got) == Counter(want), workers


def test_concat_stream_covers_every_token(token_dir: tuple[Path, Any]) -> None:
    local, docs = token_dir
    config = {**CONFIG, "mode": "concat", "shuffle": False, "buffer_size": 10_000}
    flat = [t for seq in _all(local, **config) for t in seq]
    assert flat == np.concatenate(docs).tolist()


def _check_worlds(local: Path, tmp: Path, worlds: tuple[int, ...], walk: tuple[int, int]) -> None:
    config = {**CONFIG, "mode": "concat", "eos_id": 0}
    want = Counter(_all(local, **config))
    for world in worlds:
        assert tuples(run_ranks(local, world, config, tmp, None)) == want, world
    # Stop mid-window (carry-over pending) on walk[0] ranks, merge, resume on walk[1] ranks.
    first = run_ranks(local, walk[0], {**config, "stop": 13}, tmp, None)
    merged = PackedDataset.merge_states([r["state"] for r in first])
    state = tmp / "state.json"
    state.write_text(json.dumps(merged))
    second = run_ranks(local, walk[1], config, tmp, state)
    assert sum(len(r["sequences"]) for r in first) == 13 * walk[0]
    assert tuples(first) + tuples(second) == want  # no token duplicated or missing


def test_world_size_and_resume_at_another_world_size(
    token_dir: tuple[Path, Any], tmp_path: Path
) -> None:
    _check_worlds(token_dir[0], tmp_path, (2,), (2, 1))


def test_streaming_documents_are_all_read_on_two_ranks(
    token_dir: tuple[Path, Any], tmp_path: Path
) -> None:
    """A ``StreamingDataset``'s ``len`` is one rank's share of its epoch; the packer deals
    windows out itself, so the two ranks together must still pack every document, and a
    state from two ranks resumes on one (same ``num_documents``)."""
    local, _ = token_dir
    config = {**CONFIG, "mode": "concat", "eos_id": 0}
    want = Counter(_all(local, **config))
    streaming = {**config, "source": "streaming"}
    assert tuples(run_ranks(local, 2, streaming, tmp_path, None)) == want
    first = run_ranks(local, 2, {**streaming, "stop": 13}, tmp_path, None)
    state = tmp_path / "state.json"
    state.write_text(json.dumps(PackedDataset.merge_states([r["state"] for r in first])))
    second = run_ranks(local, 1, streaming, tmp_path, state)
    assert tuples(first) + tuples(second) == want


@pytest.mark.slow
def test_world_sizes_sweep_and_resume_2_to_3(token_dir: tuple[Path, Any], tmp_path: Path) -> None:
    _check_worlds(token_dir[0], tmp_path, (1, 2, 3), (2, 3))


def test_resume_in_process_is_exact(token_dir: tuple[Path, Any]) -> None:
    local, _ = token_dir
    for mode in ("concat", "best_fit"):
        config = {**CONFIG, "mode": mode, "token_budget": 1500}
        want = [[_key(s) for s in b] for b in PackedDataset(LocalDataset(str(local)), **config)]
        a = PackedDataset(LocalDataset(str(local)), **config)
        it = iter(a)
        head = [[_key(s) for s in next(it)] for _ in range(7)]
        b = PackedDataset(LocalDataset(str(local)), **config)
        b.load_state_dict(json.loads(json.dumps(a.state_dict())))
        tail = [[_key(s) for s in batch] for batch in b]
        assert head + tail == want
        # Batches vary in size and each stays under the budget.
        assert all(sum(len(s) for s in batch) <= 1500 for batch in want)
        assert len({len(batch) for batch in want}) > 1


def test_state_from_other_config_names_the_field(token_dir: tuple[Path, Any]) -> None:
    local, _ = token_dir
    state = PackedDataset(LocalDataset(str(local)), **CONFIG).state_dict()
    other = PackedDataset(LocalDataset(str(local)), **{**CONFIG, "seq_len": 256})
    with pytest.raises(ValueError, match="'seq_len'"):
        other.load_state_dict(state)
    other = PackedDataset(LocalDataset(str(local)), **{**CONFIG, "mode": "concat"})
    with pytest.raises(ValueError, match="'mode'"):
        other.load_state_dict(state)


def test_states_of_the_earlier_order_are_refused_and_unshuffled_ones_still_load(
    token_dir: tuple[Path, Any],
) -> None:
    """A shuffled state written before the documents' order became a per-window permutation
    (its config has no 'order', its 'done' lists window ids) would resume on other
    documents: refused, naming the field. An unshuffled one's order never changed: it
    loads, its window ids read as runs."""
    local, _ = token_dir
    packed = PackedDataset(LocalDataset(str(local)), **CONFIG)
    earlier: dict[str, Any] = {
        "config": {k: v for k, v in packed.config().items() if k != "order"},
        "epoch": 0,
        "done": [0, 1],
        "partial": {"2": 1},
    }
    with pytest.raises(ValueError, match="'order' is None there and 'feistel' here"):
        packed.load_state_dict(earlier)
    plain = {**CONFIG, "shuffle": False}
    unshuffled = PackedDataset(LocalDataset(str(local)), **plain)
    earlier["config"] = unshuffled.config()
    assert "order" not in earlier["config"]
    unshuffled.load_state_dict(earlier)
    full = _all(local, **plain)
    skipped = sum(len(unshuffled.pack_window(w)) for w in (0, 1)) + 1
    assert [_key(s) for s in unshuffled] == full[skipped:]


def test_bad_arguments(token_dir: tuple[Path, Any]) -> None:
    ds = LocalDataset(str(token_dir[0]))
    with pytest.raises(ValueError, match="seq_len"):
        PackedDataset(ds, seq_len=0)
    with pytest.raises(ValueError, match="token_budget"):
        PackedDataset(ds, seq_len=8, token_budget=0)
    with pytest.raises(ValueError, match="token_budget"):
        PackedDataset(ds, seq_len=8, token_budget=4)
    with pytest.raises(ValueError, match="mode"):
        PackedDataset(ds, seq_len=8, mode="greedy")
    too_short = PackedDataset(ds, seq_len=8, mode="best_fit")
    with pytest.raises(ValueError, match="seq_len.*truncate"):
        next(iter(too_short))
