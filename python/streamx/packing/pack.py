"""Packing one buffer of documents into sequences: the bin decisions run in Rust
(``_core.pack_best_fit``), tokens move in bulk with numpy, never one by one in Python."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from streamx import _core

__all__ = ["PackedSequence", "pack_best_fit", "pack_concat"]


@dataclass(frozen=True)
class PackedSequence:
    """One packed sequence: ``input_ids`` and ``position_ids`` of length ``seq_len``,
    ``cu_seqlens`` the cumulative lengths of its document pieces (FlashAttention varlen),
    ``num_tokens`` the non-pad tokens (the rest is ``pad_id``)."""

    input_ids: NDArray[np.int64]
    position_ids: NDArray[np.int64]
    cu_seqlens: NDArray[np.int32]
    num_tokens: int


def _flatten(
    docs: list[NDArray[np.int64]], eos_id: int | None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """All tokens of ``docs`` (each followed by ``eos_id`` when given) and each piece's length."""
    if eos_id is not None:
        eos = np.array([eos_id], np.int64)
        docs = [piece for doc in docs for piece in (doc, eos)]
        tokens = np.concatenate(docs) if docs else np.zeros(0, np.int64)
        lens = np.array([len(d) for d in docs], np.int64).reshape(-1, 2).sum(axis=1)
        return tokens, lens
    tokens = np.concatenate(docs) if docs else np.zeros(0, np.int64)
    return tokens, np.array([len(d) for d in docs], np.int64)


def _sequences(
    tokens: NDArray[np.int64],
    lens: NDArray[np.int64],
    bounds: NDArray[np.int64],
    seq_len: int,
    pad_id: int,
) -> list[PackedSequence]:
    """Cuts ``tokens`` at ``bounds`` (sequence starts, plus the end) into padded sequences;
    ``lens`` are the document lengths, used for the boundaries."""
    doc_starts = np.concatenate([[0], np.cumsum(lens)])
    # Position of each token inside its document, without a per-token loop.
    positions = np.arange(len(tokens), dtype=np.int64) - np.repeat(doc_starts[:-1], lens)
    out = []
    # Document starts strictly inside each sequence, found by binary search (not a scan).
    lo = np.searchsorted(doc_starts, bounds[:-1], side="right")
    hi = np.searchsorted(doc_starts, bounds[1:], side="left")
    for k, (start, end) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        n = end - start
        ids = np.full(seq_len, pad_id, np.int64)
        ids[:n] = tokens[start:end]
        pos = np.zeros(seq_len, np.int64)
        pos[:n] = positions[start:end]
        inner = doc_starts[lo[k] : hi[k]] - start
        cu = np.concatenate([[0], inner, [n]]).astype(np.int32)
        out.append(PackedSequence(ids, pos, cu, n))
    return out


def pack_concat(
    docs: list[NDArray[np.int64]], seq_len: int, *, eos_id: int | None = None, pad_id: int = 0
) -> list[PackedSequence]:
    """Concatenates ``docs`` and splits them every ``seq_len`` tokens: a document that does not
    fit continues in the next sequence. The last sequence is padded when short."""
    if seq_len < 1:
        raise ValueError(f"seq_len must be at least 1, got {seq_len}")
    tokens, lens = _flatten(docs, eos_id)
    total = len(tokens)
    bounds = np.append(np.arange(0, total, seq_len, dtype=np.int64), total)
    return _sequences(tokens, lens, bounds, seq_len, pad_id)


def pack_best_fit(
    docs: list[NDArray[np.int64]],
    seq_len: int,
    *,
    eos_id: int | None = None,
    pad_id: int = 0,
    truncate: bool = False,
) -> list[PackedSequence]:
    """Packs whole documents into as few ``seq_len`` sequences as best-fit decreasing finds;
    each sequence is padded with ``pad_id``. A document longer than ``seq_len`` is an error
    unless ``truncate``, which cuts it to ``seq_len`` tokens."""
    if seq_len < 1:
        raise ValueError(f"seq_len must be at least 1, got {seq_len}")
    tokens, lens = _flatten(docs, eos_id)
    if len(lens) and int(lens.max()) > seq_len:
        if not truncate:
            i = int(np.argmax(lens > seq_len))
            raise ValueError(
                f"seq_len: document {i} of the buffer has {int(lens[i])} tokens, more than "
                f"seq_len={seq_len}; pass truncate=True to cut it"
            )
        docs = [d[: seq_len - (eos_id is not None)] for d in docs]
        tokens, lens = _flatten(docs, eos_id)
    bins, nbins = _core.pack_best_fit(lens.astype(np.uint64), seq_len)
    order = np.argsort(bins, kind="stable")  # documents of one bin stay in input order
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    # Source index of each packed token: its document's old start plus its offset, in bulk.
    new_starts = np.concatenate([[0], np.cumsum(lens[order])[:-1]]).astype(np.int64)
    idx = np.arange(len(tokens), dtype=np.int64) + np.repeat(
        starts[order] - new_starts, lens[order]
    )
    packed = tokens[idx]
    bin_tokens = np.bincount(bins, weights=lens, minlength=nbins).astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(bin_tokens)]).astype(np.int64)
    return _sequences(packed, lens[order], bounds, seq_len, pad_id)
