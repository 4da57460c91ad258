"""``PackedDataset`` over the in-place sources (issue 24: token streams "or the in-place
sources when they land"): the same token documents in a Parquet file, WebDataset tars and a
LitData optimized dataset pack into exactly the sequences MDS gives, in this process and
through DataLoader worker processes, and a resume mid-epoch continues exactly."""

from __future__ import annotations

import functools
import io
import json
import tarfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from numpy.typing import NDArray
from torch.utils.data import DataLoader
from wds_data import add

from streamx import (
    LitDataStream,
    LocalDataset,
    MDSWriter,
    PackedDataset,
    ParquetStream,
    StreamingDataset,
    WebDatasetStream,
)

DOCS = 300
CONFIG: dict[str, Any] = {
    "seq_len": 256,
    "buffer_size": 32,
    "shuffle": True,
    "seed": 3,
    "truncate": True,
}
Key = tuple[int, ...]


def _doc(i: int) -> NDArray[np.int32]:
    """Document ``i``: 1 to 700 token ids, the same in every format."""
    rng = np.random.default_rng([7, i])
    length = int(np.clip(rng.lognormal(4.5, 1.0), 1, 700))
    return rng.integers(1, 50_000, size=length, dtype=np.int32)


def _lit_doc(i: int) -> dict[str, Any]:
    return {"tokens": _doc(i)}


def _npy(array: NDArray[np.int32]) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The documents written once per format."""
    root = tmp_path_factory.mktemp("packed_in_place")
    docs = [_doc(i) for i in range(DOCS)]
    with MDSWriter(out=str(root / "mds"), columns={"tokens": "ndarray:int32"}) as writer:
        for doc in docs:
            writer.write({"tokens": doc})
    table = pa.table({"tokens": pa.array([d.tolist() for d in docs], pa.list_(pa.int32()))})
    pq.write_table(table, root / "docs.parquet", row_group_size=64)
    (root / "tars").mkdir()
    for part in range(3):  # 100 documents a tar
        with tarfile.open(root / "tars" / f"part-{part}.tar", "w") as tar:
            for i in range(part * 100, (part + 1) * 100):
                add(tar, f"doc-{i:05d}.tokens.npy", _npy(docs[i]))
    litdata = pytest.importorskip("litdata")
    litdata.optimize(
        fn=_lit_doc,
        inputs=list(range(DOCS)),
        output_dir=str(root / "lit"),
        chunk_size=70,
        num_workers=1,
        mode="overwrite",
        verbose=False,
    )
    return {"mds": root / "mds", "parquet": root / "docs.parquet", "wds": root / "tars"}


def _documents(kind: str, sources: dict[str, Path], local: Path) -> Any:
    if kind == "mds":
        return LocalDataset(str(sources["mds"]))
    streams: dict[str, Callable[..., Any]] = {
        "parquet": functools.partial(ParquetStream, remote=str(sources["parquet"])),
        "wds": functools.partial(WebDatasetStream, remote=str(sources["wds"])),
        "litdata": functools.partial(LitDataStream, remote=str(sources["parquet"].parent / "lit")),
    }
    return StreamingDataset(streams=[streams[kind](local=str(local))])


def _key(sequence: dict[str, Any]) -> Key:
    return tuple(sequence["input_ids"][: int(sequence["num_tokens"])].tolist())


def _packed(make: Callable[[], Any], **config: Any) -> PackedDataset:
    return PackedDataset(make(), **{**CONFIG, **config})


# A WebDataset sample keys each field by its whole extension, as ``webdataset`` does.
_COLUMN = {"parquet": "tokens", "wds": "tokens.npy", "litdata": "tokens"}


@pytest.mark.parametrize("kind", ["parquet", "wds", "litdata"])
@pytest.mark.parametrize("mode", ["concat", "best_fit"])
def test_in_place_documents_pack_as_mds_does(
    sources: dict[str, Path], tmp_path: Path, kind: str, mode: str
) -> None:
    want = [_key(s) for s in _packed(lambda: _documents("mds", sources, tmp_path), mode=mode)]
    assert len(want) > 3 * 10  # several windows of sequences

    def make() -> Any:
        return _documents(kind, sources, tmp_path / "cache")

    column = _COLUMN[kind]
    assert [_key(s) for s in _packed(make, mode=mode, column=column)] == want
    loader = DataLoader(
        _packed(make, mode=mode, column=column),
        batch_size=None,
        num_workers=2,
        multiprocessing_context="fork",
    )
    assert Counter(_key(s) for s in loader) == Counter(want)

    first = _packed(make, mode=mode, column=column)
    it = iter(first)
    head = [_key(next(it)) for _ in range(len(want) // 3)]
    resumed = _packed(make, mode=mode, column=column)
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    assert head + [_key(s) for s in resumed] == want


def test_a_missing_column_is_named(sources: dict[str, Path], tmp_path: Path) -> None:
    """Packing a WebDataset by the bare field name names the document and the keys it has."""
    packed = _packed(lambda: _documents("wds", sources, tmp_path), column="tokens")
    with pytest.raises(ValueError, match=r"Document \d+ has no column 'tokens' .*tokens\.npy"):
        next(iter(packed))
