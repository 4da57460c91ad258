"""``ds[i]`` of an MDS dataset with a remote takes the one-call route too: a sample whose
shard is not local yet is fetched by the general route, and every answer, error included,
is ``get_item``'s."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import streamx

N = 30


def test_an_mds_remote_fetches_through_the_general_route(tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    with streamx.MDSWriter(out=str(remote), columns={"id": "int", "t": "str"}, size_limit=300) as w:
        for i in range(N):
            w.write({"id": i, "t": f"t{i}" * (i % 3 + 1)})
    ds = streamx.StreamingDataset(remote=str(remote), local=str(tmp_path / "local"))
    assert ds.num_shards > 2 and ds._fast_get is not None
    assert ds._fast_get(N - 1) is None  # its shard is not local: not an answer
    assert ds[N - 1] == {"id": N - 1, "t": f"t{N - 1}" * ((N - 1) % 3 + 1)}  # fetched
    for i in (0, 7, N - 1):
        assert ds[i] == ds.get_item(i) == ds[np.int64(i)] == ds[i - N]
    for bad in (N, -N - 1, 2**70):
        with pytest.raises(IndexError, match=f"Sample index {bad} out of range for {N} samples"):
            ds[bad]
