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


def test_a_skipped_stage_loader_state_is_refused_where_data_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dp2 x pp3 with skip_pipeline_middle: rank 2 (dp 0, stage 1) iterates nothing, so its
    loader's count is 0 whatever the run read. Its state says so; a rank that reads data
    refuses it, naming the key and the rank (it would start the epoch over), while a skipped
    stage loads it and a reading stage's state loads everywhere."""
    out = tmp_path / "mds"
    with streamx.MDSWriter(out=str(out), columns={"id": "int"}, size_limit=300) as writer:
        for i in range(40):
            writer.write({"id": i})
    mesh = Mesh(dp=2, pp=3, skip_pipeline_middle=True)  # rank = dp + 2 * stage

    def on_rank(rank: int) -> streamx.StreamingDataset:
        for name, value in (("RANK", rank), ("WORLD_SIZE", 6), ("LOCAL_WORLD_SIZE", 6)):
            monkeypatch.setenv(name, str(value))
        return streamx.StreamingDataset(local=str(out), batch_size=2, mesh=mesh)

    middle = streamx.StreamingDataLoader(on_rank(2), batch_size=2)
    assert list(middle) == []
    skipped = middle.state_dict()
    assert skipped is not None and skipped["sample_in_epoch"] == 0
    assert "rank 2 is a pipeline stage that reads no data" in skipped["streamx_uncounted"]
    with pytest.raises(ValueError, match="'streamx_uncounted': rank 2 is a pipeline stage"):
        on_rank(0).load_state_dict(skipped)
    with pytest.raises(ValueError, match="Load the loader state of a rank that reads data"):
        on_rank(5).load_state_dict(skipped)  # the last stage reads labels
    on_rank(3).load_state_dict(skipped)  # a skipped stage: nothing to go wrong

    first = streamx.StreamingDataLoader(on_rank(0), batch_size=2)
    for step, _ in enumerate(first):
        if step == 2:
            break
    reading = first.state_dict()
    assert reading is not None and reading["sample_in_epoch"] == 12
    assert "streamx_uncounted" not in reading
    for rank in (0, 2, 5):
        on_rank(rank).load_state_dict(reading)
