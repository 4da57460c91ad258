"""A mesh's resume state counts the data-parallel ranks' samples only."""

from __future__ import annotations

from pathlib import Path

import pytest

import streamx
from streamx.order.mesh import Mesh


def test_state_dict_counts_dp_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank 1 of dp2 x tp2: after 3 batches of 2 the epoch is 3 * 2 * dp = 12 samples in."""
    out = tmp_path / "mds"
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=300) as writer:
        for i in range(40):
            writer.write({"id": i})
    for name, value in (("RANK", "1"), ("WORLD_SIZE", "4"), ("LOCAL_WORLD_SIZE", "4")):
        monkeypatch.setenv(name, value)
    mesh = Mesh(dp=2, tp=2)
    dataset = streamx.StreamingDataset(local=str(out), batch_size=2, mesh=mesh)
    loader = streamx.StreamingDataLoader(dataset, batch_size=2)
    seen: list[int] = []
    for step, batch in enumerate(loader):
        seen.extend(int(i) for i in batch["id"])
        if step == 2:
            break
    state = loader.state_dict()
    assert state is not None and state["sample_in_epoch"] == 12
    assert len(seen) == 6
