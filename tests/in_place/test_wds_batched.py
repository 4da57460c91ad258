"""The batched ``StreamingDataLoader`` path over WebDataset tars gives torch's
``default_collate`` batches: the same samples, order, keys, types, dtypes and values (and the
same error where ``default_collate`` refuses a batch or a field is corrupt), with real
DataLoader workers.

The oracle is the per-sample path (``batched=False``: torch's own DataLoader, each sample
decoded to a dict in a worker and collated there by ``default_collate``);
``tests/in_place/test_wds_samples.py`` ties those samples to webdataset's own grouping and
decoders, ``tests/in_place/test_wds_order.py`` their order to MDS's.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from batch_compare import (
    assert_batched_equals_per_sample,
    assert_resume_matches,
    assert_same_batches,
)
from nginx_server import Nginx, find_nginx  # tests/storage, on the path by conftest
from pq_data import write_mds_like
from wds_data import add

from streamx import Stream, StreamingDataLoader, StreamingDataset, WebDatasetStream
from streamx.exceptions import CorruptShardError
from streamx.format.readers.mixed import MixedSampleReader

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(180)
SIZES = [16, 9, 16, 1, 20]  # samples per tar: shuffled batches of 8 span tars
COUNT = sum(SIZES)

# Sample ``i``'s fields by name, as bytes.
Fields = Callable[[int], dict[str, bytes]]


def _npy(array: np.ndarray[Any, Any]) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def typed(i: int) -> dict[str, bytes]:
    """Fields that come as arrays (labels, ``.npy`` of one header) and as values."""
    return {
        "cls": str(i).encode(),
        "id": f" {i * 1000}\n".encode(),
        "count": f"\x1f{i % 7}".encode(),  # str.strip takes \x1f, int(bytes) does not
        "grid.npy": _npy(np.full((2, 3), i / 4, np.float32)),
        "mask.npy": _npy(np.array([i % 2 == 0, i % 3 == 0])),
        "json": json.dumps({"id": i, "name": f"n{i}"}).encode(),
        "txt": f"row {i} ".encode() * (i % 3),
        "seg.bin": bytes([i % 251]) * (i % 5),
    }


def _write(folder: Path, fields: Fields, sizes: list[int]) -> str:
    """One tar per entry of ``sizes``, samples numbered on across them."""
    folder.mkdir(parents=True)
    start = 0
    for number, size in enumerate(sizes):
        with tarfile.open(folder / f"shard-{number:04d}.tar", "w") as tar:
            for i in range(start, start + size):
                for name, data in fields(i).items():
                    add(tar, f"s-{i:05d}.{name}", data)
        start += size
    return str(folder)


@pytest.fixture(scope="module")
def tars(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _write(tmp_path_factory.mktemp("wds") / "src", typed, SIZES)


def _dataset(remote: str, local: Path, **kwargs: Any) -> StreamingDataset:
    stream_keys = ("decode", "decode_images")
    stream_kwargs = {k: kwargs.pop(k) for k in stream_keys if k in kwargs}
    stream = WebDatasetStream(remote=remote, local=str(local), **stream_kwargs)
    options: dict[str, Any] = {"shuffle": True, "shuffle_seed": 11, "shuffle_block_size": 30}
    return StreamingDataset(streams=[stream], batch_size=8, **{**options, **kwargs})


def _loader(ds: StreamingDataset, workers: int, batched: bool, **kwargs: Any) -> Any:
    context = kwargs.pop("context", "fork")
    return StreamingDataLoader(
        ds,
        batch_size=8,
        num_workers=workers,
        batched=batched,
        multiprocessing_context=context if workers else None,
        **kwargs,
    )


def _outcome(loader: Any) -> tuple[list[Any], str | None]:
    """The batches up to the first error, and that error's type and last line."""
    batches: list[Any] = []
    try:
        for batch in loader:
            batches.append(batch)
    except Exception as err:
        return batches, f"{type(err).__name__}: {str(err).splitlines()[-1]}"
    return batches, None


@pytest.mark.parametrize(
    ("workers", "drop_last", "context"), [(0, False, None), (2, True, "fork"), (2, False, "spawn")]
)
def test_batches_equal_default_collate(
    tars: str, tmp_path: Path, workers: int, drop_last: bool, context: str | None
) -> None:
    """Spawned workers get the dataset by pickle, open tar readers included."""
    first = assert_batched_equals_per_sample(
        lambda local: _dataset(tars, tmp_path / local),
        _loader,
        key="cls",
        count=COUNT,
        workers=workers,
        drop_last=drop_last,
        context=context,
    )
    assert list(first) == ["__key__", "__url__", *typed(0)]
    kinds = {k: (v.dtype, tuple(v.shape)) for k, v in first.items() if torch.is_tensor(v)}
    assert kinds["cls"] == (torch.int64, (8,)) and kinds["id"] == (torch.int64, (8,))
    assert kinds["grid.npy"] == (torch.float32, (8, 2, 3))
    assert kinds["mask.npy"] == (torch.bool, (8, 2))
    assert isinstance(first["json"], dict) and isinstance(first["txt"], list)
    assert isinstance(first["seg.bin"][0], bytes) and isinstance(first["__key__"][0], str)


def test_columns_come_field_by_field(tars: str, tmp_path: Path) -> None:
    """Labels and ``.npy`` arrays of one header are arrays (fresh, writable); other fields
    are the samples' values (local tars: read where they lie, at once)."""
    ds = _dataset(tars, tmp_path / "c", shuffle=False)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    assert isinstance(ds._reader, MixedSampleReader)
    reader = ds._reader.batch_reader
    assert reader is not None and reader.get_columns([3]) is not None
    ids = [30, 3, 41, 17, 3, 18, 19, 20]  # four tars, out of order, one sample twice
    columns = get_columns(ids)
    assert columns is not None
    samples = [ds[i] for i in ids]
    assert list(columns) == list(samples[0])
    arrays = {k: v for k, v in columns.items() if isinstance(v, np.ndarray)}
    assert set(arrays) == {"cls", "id", "count", "grid.npy", "mask.npy"}
    assert all(a.flags.writeable and len(a) == len(ids) for a in arrays.values())
    assert arrays["cls"].tolist() == ids and arrays["id"].dtype == np.int64
    for name, array in arrays.items():
        want = np.array([s[name] for s in samples])
        assert array.dtype == want.dtype and np.array_equal(array, want), name
    for name in set(columns) - set(arrays):
        assert_same_batches(columns[name], [s[name] for s in samples], name)
    assert get_columns([]) == {}
    with pytest.raises(IndexError):
        get_columns([3, COUNT])


def test_undecoded_fields_are_bytes(tars: str, tmp_path: Path) -> None:
    got = []
    for batched in (False, True):
        ds = _dataset(tars, tmp_path / f"c{batched}", decode=False)
        got.append(list(_loader(ds, 0, batched)))
    assert_same_batches(got[1], got[0])
    assert got[1][0]["cls"][0] == str(int(got[1][0]["__key__"][0][2:])).encode()


def _ragged(i: int) -> dict[str, bytes]:
    return {"cls": str(i).encode(), "vec.npy": _npy(np.arange(i % 3 + 1, dtype=np.int16))}


def test_ragged_arrays_fail_as_default_collate_does(tmp_path: Path) -> None:
    """``.npy`` arrays whose shapes differ within a batch come as their values, and the
    batch fails with torch's own error, as on the per-sample path; a batch whose arrays
    agree (even across tars) still stacks."""
    src = _write(tmp_path / "ragged", _ragged, [10, 6])
    outcomes = []
    for batched in (False, True):
        ds = _dataset(src, tmp_path / f"c{batched}")
        outcomes.append(_outcome(_loader(ds, 0, batched)))
    assert outcomes[0] == ([], outcomes[1][1]) and outcomes[1][1] is not None
    ds = _dataset(src, tmp_path / "cTrue", shuffle=False)
    assert ds[0]["cls"] == 0 and ds[12]["cls"] == 12  # both tars local
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    columns = get_columns([1, 2])
    assert columns is not None and isinstance(columns["vec.npy"], list)
    stacked = get_columns([1, 4, 13])["vec.npy"]  # i % 3 == 1: one shape
    assert isinstance(stacked, np.ndarray) and stacked.tolist() == [[0, 1]] * 3
    assert stacked.dtype == np.int16


def _image(i: int) -> dict[str, bytes]:
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (4 + i % 2, 3), (i, 20, 30)).save(png, format="PNG")
    return {"png": png.getvalue(), "cls": str(i).encode()}


def test_images_come_as_lists(tmp_path: Path) -> None:
    """Image fields come as their bytes, or as PIL images (whose batch torch refuses on
    both paths alike)."""
    src = _write(tmp_path / "img", _image, [10, 6])
    for decode_images in (False, True):
        outcomes = []
        for batched in (False, True):
            ds = _dataset(src, tmp_path / f"c{decode_images}{batched}", decode_images=decode_images)
            outcomes.append(_outcome(_loader(ds, 0, batched)))
        assert_same_batches(outcomes[1][0], outcomes[0][0])
        assert outcomes[1][1] == outcomes[0][1]
        assert (outcomes[1][1] is None) != decode_images
    ds = _dataset(src, tmp_path / "cTrueTrue", decode_images=True, shuffle=False)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    assert ds[0]["cls"] == 0 and ds[12]["cls"] == 12  # both tars local
    columns = get_columns([0, 1, 12])
    assert columns is not None and isinstance(columns["png"], list)
    assert [image.size for image in columns["png"]] == [(4, 3), (5, 3), (4, 3)]
    assert isinstance(columns["cls"], np.ndarray) and columns["cls"].tolist() == [0, 1, 12]


def _some_have(i: int) -> dict[str, bytes]:
    """Sample 10 lacks ``json``; sample 9 alone has ``extra.txt``."""
    fields = {"cls": str(i).encode(), "json": b"[1]", "extra.txt": b"x"}
    if i == 10:
        del fields["json"]
    if i != 9:
        del fields["extra.txt"]
    return fields


@pytest.mark.parametrize("workers", [0, 2])
def test_fields_only_some_samples_hold(tmp_path: Path, workers: int) -> None:
    """A batch whose first sample has a field a later one lacks fails with
    ``default_collate``'s ``KeyError``; a field the first lacks is left out."""
    src = _write(tmp_path / "some", _some_have, [12])
    outcomes = []
    for batched in (False, True):
        ds = _dataset(src, tmp_path / f"c{batched}", shuffle=False)
        outcomes.append(_outcome(_loader(ds, workers, batched)))
    assert outcomes[1][1] == outcomes[0][1] and str(outcomes[0][1]).endswith("'json'")
    assert_same_batches(outcomes[1][0], outcomes[0][0])
    assert outcomes[0][0]  # a batch without sample 10 came first
    ds = _dataset(src, tmp_path / "cTrue", shuffle=False)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None
    assert ds[0]["cls"] == 0  # the tar local
    columns = get_columns([10, 9, 11])  # the first lacks json; only 9 has extra.txt
    assert columns is not None and list(columns) == ["__key__", "__url__", "cls"]
    assert columns["cls"] == [10, 9, 11]  # the per-sample path's values, collated later


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_mid_epoch(tars: str, tmp_path: Path, workers: int) -> None:
    def loader(local: str, batched: bool) -> Any:
        return _loader(_dataset(tars, tmp_path / local), workers, batched)

    assert_resume_matches(loader, "cls", 3)


def test_mixed_with_mds_reads_per_sample(tmp_path: Path) -> None:
    """Tars beside an MDS stream: no batch reader, the per-sample path's batches."""
    write_mds_like(str(tmp_path / "mds"), [16, 16, 8])
    src = _write(tmp_path / "src", lambda i: {"id": str(i).encode()}, [16, 24])
    got = []
    for batched in (False, True):
        streams = [
            WebDatasetStream(remote=src, local=str(tmp_path / f"l{batched}")),
            Stream(local=str(tmp_path / "mds")),
        ]
        ds = StreamingDataset(streams=streams, batch_size=8, shuffle=True, shuffle_seed=2)
        assert ds._sample_access().get_columns is None
        got.append(_outcome(_loader(ds, 2, batched)))
    assert_same_batches(got[1], got[0])


@pytest.fixture
def served_many(tmp_path: Path) -> Iterator[str]:
    """Seven tars over HTTP (named by braces: nginx cannot list), fetched as copies."""
    if find_nginx() is None:
        pytest.skip("nginx is not installed (make install sets it up)")
    _write(tmp_path / "many", typed, [8, 8, 8, 8, 8, 8, 5])
    with Nginx(tmp_path / "many") as server:
        yield f"{server.endpoint}/shard-{{0000..0006}}.tar"


@pytest.mark.remote
def test_a_remote_tar_not_here_yet_gives_none(served_many: str, tmp_path: Path) -> None:
    ds = _dataset(served_many, tmp_path / "c", shuffle=False)
    get_columns = ds._sample_access().get_columns
    assert get_columns is not None and isinstance(ds._reader, MixedSampleReader)
    reader = ds._reader.batch_reader
    assert reader is not None and reader.get_columns([3]) is None  # no tar here yet
    assert get_columns([3]) is not None  # ...fetched by the miss handler's way


@pytest.mark.remote
def test_tars_fetched_under_a_cache_limit(served_many: str, tmp_path: Path) -> None:
    """Tars fetched while the pass runs, a few at a time, and batches that span them (read
    in pieces where the shard cache holds too few): the per-sample path's batches."""
    sizes = [8, 8, 8, 8, 8, 8, 5]
    tars = served_many
    got = []
    for batched in (False, True):
        ds = _dataset(tars, tmp_path / f"c{batched}")
        limit = 4 * max(int(s.raw_data.bytes) for s in ds.shards) + ds.cache_usage + 64
        limited = _dataset(tars, tmp_path / f"l{batched}", cache_limit=limit)
        got.append([list(_loader(limited, 2, batched)) for _ in range(2)])
        kept = list((tmp_path / f"l{batched}").glob("shard-*.tar"))
        assert 0 < len(kept) < len(sizes)
    assert_same_batches(got[1], got[0])
    assert sorted(i for b in got[1][0] for i in b["cls"].tolist()) == list(range(sum(sizes)))


def _bad_json(i: int) -> dict[str, bytes]:
    fields = typed(i)
    if i in (13, 14):  # two bad fields of one batch: the first in order is named
        fields["json"] = b"{not json"
    return fields


def _short_npy(i: int) -> dict[str, bytes]:
    fields = typed(i)
    if i == 13:  # its header as the others', its data cut short
        fields["grid.npy"] = fields["grid.npy"][:-4]
    return fields


def _bad_label(i: int) -> dict[str, bytes]:
    fields = typed(i)
    if i == 13:
        fields["id"] = b"12x"
    return fields


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (_bad_json, r"sample 's-00013', field 'json': not a valid \.json"),
        (_short_npy, r"sample 's-00013', field 'grid\.npy': not a valid \.npy"),
        (_bad_label, r"sample 's-00013', field 'id': not a valid \.id"),
    ],
)
@pytest.mark.parametrize("workers", [0, 2])
def test_a_corrupt_member_is_named(
    tmp_path: Path, fields: Fields, message: str, workers: int
) -> None:
    src = _write(tmp_path / "bad", fields, SIZES)
    errors = []
    for batched in (False, True):
        ds = _dataset(src, tmp_path / f"c{batched}", shuffle=False)
        if batched:
            assert ds._sample_access().get_columns is not None
        with pytest.raises(CorruptShardError, match=rf"shard-0000\.tar, {message}") as err:
            list(_loader(ds, workers, batched))
        errors.append(str(err.value).splitlines()[-1])
    assert errors[0] == errors[1]


def _dtype_by_tar(i: int) -> dict[str, bytes]:
    """Tars of 6 whose ``vec.npy`` arrays are ``int16`` and ``int32`` by turns."""
    dtype = np.int16 if i // 6 % 2 else np.int32
    return {"cls": str(i).encode(), "vec.npy": _npy(np.full(3, i, dtype))}


def test_arrays_of_two_dtypes_promote_as_default_collate_does(tmp_path: Path) -> None:
    """A batch whose ``.npy`` dtypes differ (within one read, or between the pieces a cache
    limit cuts it into) is torch's type promotion of the per-sample arrays."""
    src = _write(tmp_path / "dtypes", _dtype_by_tar, [6] * 8)
    got = []
    for batched in (False, True):
        ds = _dataset(src, tmp_path / f"c{batched}")
        limit = 4 * max(int(s.raw_data.bytes) for s in ds.shards) + ds.cache_usage + 64
        limited = _dataset(src, tmp_path / f"l{batched}", cache_limit=limit)
        got.append([list(_loader(ds, 0, batched)), list(_loader(limited, 0, batched))])
    assert_same_batches(got[1], got[0])
    assert {b["vec.npy"].dtype for b in got[1][0]} == {torch.int32}
