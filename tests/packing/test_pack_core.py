"""The packers over in-memory documents: concat equals a plain Python reference, best-fit
places every token once within bounds, and is within 1% of offline first-fit decreasing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from numpy.typing import NDArray
from packing_docs import doc_lengths

from streamx.packing import pack_best_fit, pack_concat
from streamx.packing.pack import PackedSequence


def _docs(lengths: list[int], seed: int = 0) -> list[NDArray[np.int64]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(1, 1000, size=n).astype(np.int64) for n in lengths]


def _reference_concat(
    docs: list[NDArray[np.int64]], seq_len: int, eos: int | None, pad: int
) -> list[list[int]]:
    stream: list[int] = []
    for doc in docs:
        stream.extend(int(t) for t in doc)
        if eos is not None:
            stream.append(eos)
    out = []
    for start in range(0, len(stream), seq_len):
        chunk = stream[start : start + seq_len]
        out.append(chunk + [pad] * (seq_len - len(chunk)))
    return out


@pytest.mark.parametrize("eos", [None, 0])
@pytest.mark.parametrize("seq_len", [1, 7, 64, 1000])
def test_concat_equals_python_reference(seq_len: int, eos: int | None) -> None:
    docs = _docs([5, 1, 130, 64, 63, 2, 500, 9])
    got = pack_concat(docs, seq_len, eos_id=eos, pad_id=-1)
    want = _reference_concat(docs, seq_len, eos, -1)
    assert [s.input_ids.tolist() for s in got] == want
    # Boundaries: each piece's positions restart at 0 at a document start.
    for s in got:
        assert s.cu_seqlens[0] == 0 and s.cu_seqlens[-1] == s.num_tokens
        for a, b in zip(s.cu_seqlens[:-1], s.cu_seqlens[1:]):
            assert b > a


def test_concat_carries_remainder_into_next_sequence() -> None:
    docs = [np.arange(10, dtype=np.int64), np.arange(100, 103, dtype=np.int64)]
    seqs = pack_concat(docs, 4)
    assert [s.input_ids.tolist() for s in seqs] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9, 100, 101],
        [102, 0, 0, 0],
    ]
    # The carried piece continues its document's positions; the next document restarts at 0.
    assert seqs[2].position_ids.tolist() == [8, 9, 0, 1]
    assert seqs[2].cu_seqlens.tolist() == [0, 2, 4]
    assert seqs[3].position_ids[:1].tolist() == [2]


def _check_best_fit(docs: list[NDArray[np.int64]], seq_len: int) -> list[PackedSequence]:
    seqs = pack_best_fit(docs, seq_len, pad_id=-1)
    pieces: list[tuple[int, ...]] = []
    for s in seqs:
        assert len(s.input_ids) == seq_len
        assert s.num_tokens <= seq_len
        assert (s.input_ids[s.num_tokens :] == -1).all()
        cu = s.cu_seqlens.tolist()
        assert cu[0] == 0 and cu[-1] == s.num_tokens
        for a, b in itertools.pairwise(cu):
            piece = s.input_ids[a:b]
            assert s.position_ids[a:b].tolist() == list(range(b - a))  # whole documents
            pieces.append(tuple(piece.tolist()))
    # Every document exactly once, whole.
    assert sorted(pieces) == sorted(tuple(d.tolist()) for d in docs)
    return seqs


def test_best_fit_valid() -> None:
    docs = _docs(doc_lengths(500))
    _check_best_fit(docs, 2048)
    _check_best_fit(_docs([3, 3, 3, 1, 1, 1]), 4)


def _ffd_bins(lengths: list[int], cap: int) -> int:
    free: list[int] = []
    for n in sorted(lengths, reverse=True):
        for i, f in enumerate(free):
            if f >= n:
                free[i] -= n
                break
        else:
            free.append(cap - n)
    return len(free)


def test_best_fit_efficiency_vs_ffd() -> None:
    lengths = doc_lengths(4000, seed=7)
    docs = _docs(lengths)
    buffer = 1000
    ours = sum(len(pack_best_fit(docs[i : i + buffer], 2048)) for i in range(0, len(docs), buffer))
    ffd = _ffd_bins(lengths, 2048)  # offline, over all documents at once
    total = sum(lengths)
    efficiency = (total / (ours * 2048)) / (total / (ffd * 2048))
    assert efficiency >= 0.99, (ours, ffd, efficiency)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="seq_len"):
        pack_concat(_docs([3]), 0)
    with pytest.raises(ValueError, match="seq_len"):
        pack_best_fit(_docs([3]), 0)
    with pytest.raises(ValueError, match="seq_len.*truncate"):
        pack_best_fit(_docs([3, 9]), 8)
    seqs = pack_best_fit(_docs([3, 9]), 8, truncate=True)
    assert sum(s.num_tokens for s in seqs) == 11
