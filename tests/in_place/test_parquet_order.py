"""A Parquet source streams in the order an MDS dataset of the same shard sizes gives."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import numpy as np
import pytest
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest
from pq_data import blob, write_mds_like, write_parquet

from streamx import Stream, StreamingDataLoader, StreamingDataset
from streamx.dataset.parquet_stream import ParquetStream
from streamx.order.settings import ShuffleAlgo


class _Order(TypedDict):
    """The order keywords both datasets of a comparison share."""

    shuffle: bool
    shuffle_seed: int
    shuffle_algo: ShuffleAlgo
    batch_size: int


def _ids(ds: StreamingDataset, limit: int | None = None) -> list[int]:
    out = []
    for sample in ds:
        out.append(int(sample["id"]))
        if limit is not None and len(out) == limit:
            break
    return out


@pytest.fixture
def source(tmp_path: Path) -> tuple[str, str]:
    """Two files (70 and 45 rows, row groups of 16) and the same ids as MDS shards."""
    write_parquet(str(tmp_path / "pq" / "a.parquet"), 70, 16)
    write_parquet(str(tmp_path / "pq" / "b.parquet"), 45, 16, start=70)
    write_mds_like(str(tmp_path / "mds"), [16, 16, 16, 16, 6, 16, 16, 13])
    return str(tmp_path / "pq"), str(tmp_path / "mds")


@pytest.mark.parametrize("algo", ["py1e", "py1br", "naive"])
def test_order_equals_mds(source: tuple[str, str], tmp_path: Path, algo: ShuffleAlgo) -> None:
    pq_dir, mds = source
    kwargs: _Order = {"shuffle": True, "shuffle_seed": 7, "shuffle_algo": algo, "batch_size": 4}
    parquet = StreamingDataset(
        streams=[ParquetStream(remote=pq_dir, local=str(tmp_path / "c1"), columns=["id"])],
        num_canonical_nodes=2,
        **kwargs,
    )
    reference = StreamingDataset(local=mds, num_canonical_nodes=2, **kwargs)
    assert parquet.samples_per_shard.tolist() == reference.samples_per_shard.tolist()
    got = _ids(parquet)
    assert got == _ids(reference)
    assert set(got) == set(range(115))  # the padding repeats a few, as for MDS


def test_resume_mid_epoch(source: tuple[str, str], tmp_path: Path) -> None:
    pq_dir, _ = source

    def make() -> StreamingDataset:
        stream = ParquetStream(remote=pq_dir, local=str(tmp_path / "c"), columns=["id", "text"])
        return StreamingDataset(streams=[stream], shuffle=True, shuffle_seed=3, batch_size=5)

    full = _ids(make())
    partial = make()
    head = _ids(partial, limit=40)
    state = partial.state_dict(40, False)
    resumed = make()
    resumed.load_state_dict(state)
    assert head + _ids(resumed) == full


def test_mixed_with_mds(source: tuple[str, str], tmp_path: Path) -> None:
    pq_dir, mds = source
    streams = [
        ParquetStream(remote=pq_dir, local=str(tmp_path / "c"), columns=["id", "text"]),
        Stream(local=mds),
    ]
    ds = StreamingDataset(streams=streams, shuffle=True, shuffle_seed=1, batch_size=4)
    assert ds.num_samples == 230
    samples = list(ds)
    with_text = [s for s in samples if "text" in s]
    assert len(with_text) == 115 and len(samples) == 230
    assert all(s["text"] == f"row {s['id']}" for s in with_text)
    assert sorted(int(s["id"]) for s in samples) == sorted(list(range(115)) * 2)


def test_random_access_and_types(source: tuple[str, str], tmp_path: Path) -> None:
    pq_dir, _ = source
    ds = StreamingDataset(streams=[ParquetStream(remote=pq_dir, local=str(tmp_path / "c"))])
    sample = ds[83]
    assert sample["id"] == 83 and sample["text"] == "row 83"
    assert isinstance(sample["vec"], np.ndarray) and sample["vec"].dtype == np.float32
    assert sample["vec"].tolist() == [83.0, 83.5]
    assert isinstance(sample["tokens"], np.ndarray) and sample["tokens"].tolist() == [0, 1, 2]
    assert sample["blob"] == blob(83)
    assert [ds[i]["id"] for i in (0, 114, 16, 69, 70)] == [0, 114, 16, 69, 70]


def test_cache_limit_evicts(source: tuple[str, str], tmp_path: Path) -> None:
    """Row groups fetched from a server are copies the cache owns (local files are read in
    place: tests/in_place/test_parquet_local_in_place.py)."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    pq_dir, _ = source
    cache = tmp_path / "c"
    with Nginx(Path(pq_dir)) as server:
        remote = f"{server.endpoint}/{{a,b}}.parquet"  # a server that cannot list
        stream = ParquetStream(remote=remote, local=str(cache), columns=["id", "blob"])
        ds = StreamingDataset(streams=[stream], cache_limit="16kb", batch_size=4)
        assert sorted(_ids(ds)) == list(range(115))
    kept = [p for p in cache.iterdir() if ".rg" in p.name and ".tmp" not in p.name]
    assert 0 < len(kept) < 8
    assert sum(p.stat().st_size for p in kept) <= 16_000


def test_cached_footers_reused(source: tuple[str, str], tmp_path: Path) -> None:
    pq_dir, _ = source
    first = StreamingDataset(streams=[ParquetStream(remote=pq_dir, local=str(tmp_path / "c"))])
    footers = sorted(p.name for p in (tmp_path / "c" / "streamx-parquet").iterdir())
    assert len(footers) == 2
    again = StreamingDataset(streams=[ParquetStream(remote=pq_dir, local=str(tmp_path / "c"))])
    assert again.num_samples == first.num_samples == 115
    assert sorted(p.name for p in (tmp_path / "c" / "streamx-parquet").iterdir()) == footers


def test_dataloader_workers(source: tuple[str, str], tmp_path: Path) -> None:
    pq_dir, _ = source
    stream = ParquetStream(remote=pq_dir, local=str(tmp_path / "c"), columns=["id", "vec"])
    ds = StreamingDataset(streams=[stream], shuffle=True, batch_size=4)
    ids: list[int] = []
    for batch in StreamingDataLoader(ds, batch_size=4, num_workers=2):
        ids += batch["id"].tolist()
        assert batch["vec"].shape == (len(batch["id"]), 2)
        assert (batch["vec"][:, 0] == batch["id"]).all()
    assert sorted(ids) == list(range(115))


def test_image_columns_as_pil(tmp_path: Path) -> None:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    encoded = []
    for i in range(6):
        buffer = io.BytesIO()
        Image.new("RGB", (4, 3), (i * 40, 0, 0)).save(buffer, format="PNG")
        encoded.append(buffer.getvalue())
    pq.write_table(pa.table({"id": list(range(6)), "png": encoded}), str(tmp_path / "i.parquet"))
    stream = ParquetStream(
        remote=str(tmp_path / "i.parquet"), local=str(tmp_path / "c"), image_columns=["png"]
    )
    sample = StreamingDataset(streams=[stream])[5]
    assert isinstance(sample["png"], Image.Image) and sample["png"].size == (4, 3)
    assert sample["png"].getpixel((0, 0)) == (200, 0, 0)
    with pytest.raises(ValueError, match=r"i\.parquet: image column 'id' is not a binary"):
        StreamingDataset(
            streams=[
                ParquetStream(
                    remote=str(tmp_path / "i.parquet"),
                    local=str(tmp_path / "c2"),
                    image_columns=["id"],
                )
            ]
        )
