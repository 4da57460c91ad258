"""Batches of fixed-width columns gathered by Rust, from a cold cache over moto's S3.

The first samples of an epoch are read by range while their shard downloads, so the
gathered path falls back to decoding them one by one; the batches must not show where
each came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from s3_bucket import S3

import streamx

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.remote, pytest.mark.timeout(120)]

COLUMNS = {"id": "int", "tokens": "ndarray:uint32:64", "w": "float32"}
N = 900


def _write(out: str, compression: str | None) -> None:
    with streamx.MDSWriter(
        out=out, columns=COLUMNS, compression=compression, size_limit=40_000
    ) as writer:
        for i in range(N):
            tokens = np.arange(i, i + 64, dtype=np.uint32)
            writer.write({"id": i, "tokens": tokens, "w": np.float32(i / 4)})


@pytest.mark.parametrize(
    ("compression", "workers", "limit"),
    [(None, 0, None), (None, 2, None), ("zstd", 2, None), (None, 1, 160_000)],
)
def test_cold_remote_batches_equal_local_ones(
    module_s3: S3,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    compression: str | None,
    workers: int,
    limit: int | None,
) -> None:
    """With a cache limit of four shards, batches that span shards are read in
    pieces (the shard cache cuts them) and joined."""
    from streamx.dataset import reader_access
    from streamx.format.readers import batch_columns
    from streamx.torch import inline

    joined: list[int] = []
    real_join = inline._joined

    def counting_join(pieces: Any) -> Any:
        joined.append(len(pieces))
        return real_join(pieces)

    monkeypatch.setattr(inline, "_joined", counting_join)

    stacked: list[int] = []
    real_stack = batch_columns.stack_samples  # what reader_access imported

    def counting_stack(layout: Any, samples: Any) -> Any:
        stacked.append(len(samples))
        return real_stack(layout, samples)

    monkeypatch.setattr(reader_access, "stack_samples", counting_stack)
    remote = module_s3.url(f"fixed-{compression}-{workers}-{limit}")
    _write(remote, compression)
    _write(str(tmp_path / "local"), compression)

    def batches(**where: Any) -> list[dict[str, Any]]:
        ds = streamx.StreamingDataset(
            **where, batch_size=16, shuffle=True, shuffle_seed=5, cache_limit=limit
        )
        assert ds._sample_access().get_columns is not None
        loader = streamx.StreamingDataLoader(ds, batch_size=16, num_workers=workers)
        return list(loader)

    ours = batches(remote=remote, local=str(tmp_path / "cache"))
    assert 0 < sum(stacked) < N  # some batches decoded one by one, most gathered
    assert bool(joined) == (limit is not None)
    stacked.clear()
    limit = None  # the local copy is not cache
    expected = batches(local=str(tmp_path / "local"))
    assert not stacked
    assert len(ours) == len(expected) == -(-N // 16)
    for got, want in zip(ours, expected, strict=True):
        assert list(got) == ["id", "tokens", "w"]
        for name in got:
            assert got[name].dtype == want[name].dtype and torch.equal(got[name], want[name])
    ids = torch.cat([b["id"] for b in ours])
    assert sorted(ids.tolist()) == list(range(N))
    assert all(torch.equal(b["tokens"][:, 0].to(torch.int64), b["id"]) for b in ours)
