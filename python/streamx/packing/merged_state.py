"""One ``PackedDataset`` state from every rank's: the windows any rank finished, and how far
into each unfinished window any rank handed out sequences."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streamx.packing.windows_done import Progress

__all__ = ["merge_states"]


def merge_states(states: Sequence[Mapping[str, Any]]) -> dict[str, object]:
    """One state from every rank's (same configuration and epoch, else a ``ValueError``
    naming the field): windows done by any rank, partial offsets of the rest, and the
    documents' state of the rank that went furthest."""
    if not states:
        raise ValueError("states: need at least one state dict")
    first = states[0]
    partial: dict[int, int] = {}
    for state in states:
        for key in ("config", "epoch"):
            if state[key] != first[key]:
                raise ValueError(f"states differ in {key!r}: {state[key]!r} != {first[key]!r}")
        for w, n in dict(state["partial"]).items():
            partial[int(w)] = max(partial.get(int(w), 0), int(n))
    progress = Progress.merged([Progress.of_state(state) for state in states])
    merged: dict[str, object] = {
        "config": first["config"],
        "epoch": first["epoch"],
        **progress.state(),
        "partial": {w: n for w, n in sorted(partial.items()) if not progress.is_done(w)},
    }
    documents = [state["documents"] for state in states if "documents" in state]
    if documents:  # the documents' state over the furthest any rank touched
        merged["documents"] = max(documents, key=lambda d: int(d["position"]))
    return merged
