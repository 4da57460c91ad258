"""streamx.dask.to_mds on a real Dask local cluster of 2 worker processes (``dask_client``,
started once for the module)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")

import dask.dataframe as dd
import numpy as np
import pandas as pd
from engine_data import (
    DiesWhenEncoded,
    files_under,
    ids_of,
    make_rows,
    read_mosaic,
    read_streamx,
    same_sample,
)

from streamx.dask import to_mds
from streamx.engines.partition import ConvertRowError

# The first test also waits for the cluster to start, which takes long on a loaded machine.
pytestmark = pytest.mark.timeout(600)


def _from_pandas(frame: pd.DataFrame, partitions: int) -> dd.DataFrame:
    """``dd.from_pandas``, which dask leaves unannotated."""
    ddf: dd.DataFrame = dd.from_pandas(frame, npartitions=partitions)  # type: ignore[no-untyped-call]
    return ddf


def _frame(partitions: int = 3) -> dd.DataFrame:
    return _from_pandas(pd.DataFrame(make_rows()), partitions)


def test_local_and_read_back(dask_client: Any, tmp_path: Any) -> None:
    out = str(tmp_path / "ds")
    assert to_mds(_frame(), out, columns={"id": "int"}, size_limit=800) == out
    assert sorted(os.listdir(out)) == ["0", "1", "2", "index.json"]
    for samples in (read_streamx(None, out), read_mosaic(None, out)):
        assert ids_of(samples) == list(range(len(make_rows())))
        assert all(same_sample(s, make_rows()[int(s["id"])]) for s in samples)
    # Partition order is index order.
    assert [int(s["id"]) for s in read_streamx(None, out)] == list(range(len(make_rows())))


def test_remote(dask_client: Any, engine_s3: Any) -> None:
    out = engine_s3.url("dask/ds")
    to_mds(_frame(2), out)
    for samples in (read_streamx(out), read_mosaic(out)):
        assert ids_of(samples) == list(range(len(make_rows())))


def test_bad_row_names_partition_and_row(dask_client: Any, tmp_path: Any) -> None:
    frame = pd.DataFrame({"n": [*range(7), -1, 8, 9]})
    out = str(tmp_path / "bad")
    with pytest.raises(ConvertRowError, match=r"Dask partition 1, row 2: .*-1 out of bounds"):
        to_mds(_from_pandas(frame, 2), out, columns={"n": "uint8"})
    assert not os.path.exists(os.path.join(out, "index.json"))
    assert "1" not in os.listdir(out)  # the failed partition removed its files


def test_a_worker_killed_mid_partition_is_retried_whole(dask_client: Any, tmp_path: Any) -> None:
    """A worker that dies while writing a partition (``os._exit`` after shards were
    written) has its task run again by Dask: the retry replaces the first attempt's files
    (no temporary file, no shard its index does not list is left), and the dataset holds
    every row once."""
    marker = str(tmp_path / "died")
    metas = [{"i": i} for i in range(40)]
    metas[30] = DiesWhenEncoded({"i": 30}, marker, os.getpid())  # partition 1, row 10
    frame = pd.DataFrame({"id": range(40), "meta": metas})
    out = str(tmp_path / "killed")
    to_mds(_from_pandas(frame, 2), out, columns={"id": "int", "meta": "json"}, size_limit=64)
    assert os.path.exists(marker)  # a worker did die mid-partition
    with open(os.path.join(out, "1", "index.json")) as f:
        shards = json.load(f)["shards"]
    listed = {(shard["zip_data"] or shard["raw_data"])["basename"] for shard in shards}
    # Nothing of the killed attempt is left beside the retry's files (read before the
    # dataset is: reading decompresses shards into the same directory).
    assert set(os.listdir(os.path.join(out, "1"))) == listed | {"index.json"}
    samples = read_streamx(None, out)
    assert ids_of(samples) == list(range(40))
    assert [s["meta"] for s in samples] == [{"i": i} for i in range(40)]


def test_uninferable_column_is_named(dask_client: Any, tmp_path: Any) -> None:
    frame = pd.DataFrame({"id": [1, 2], "when": pd.to_datetime(["2020-01-01", "2020-01-02"])})
    with pytest.raises(TypeError, match="'when'"):
        to_mds(_from_pandas(frame, 1), str(tmp_path / "t"))


@pytest.mark.slow
def test_sweep_partitions_match_mosaics_writer(dask_client: Any, tmp_path: Any) -> None:
    """Many partitions of many shards, compressed and hashed: each partition directory holds
    the bytes mosaicml-streaming's own MDSWriter writes for that partition's rows."""
    from streaming import MDSWriter as MosaicWriter

    rows = make_rows(3000)
    kwargs: dict[str, Any] = {"compression": "zstd", "hashes": ["sha1", "xxh64"]}
    out = str(tmp_path / "ds")
    ddf = _from_pandas(pd.DataFrame(rows), 6)
    to_mds(ddf, out, columns={"id": "int"}, size_limit=4096, **kwargs)
    columns = {"id": "int", "text": "str", "score": "float64", "blob": "bytes"}
    columns["vec"] = "ndarray:int64"
    for i in range(ddf.npartitions):
        part = ddf.get_partition(i).compute()  # type: ignore[no-untyped-call]  # dask: unannotated
        theirs = str(tmp_path / f"mosaic-{i}")
        with MosaicWriter(out=theirs, columns=columns, size_limit=4096, **kwargs) as writer:
            for row in part.to_dict("records"):
                writer.write(dict(row, vec=np.asarray(row["vec"], dtype=np.int64)))
        ours = files_under(os.path.join(out, str(i)))
        assert len(ours) > 3 and ours == files_under(theirs)
    for samples in (read_streamx(None, out), read_mosaic(None, out)):
        assert [int(s["id"]) for s in samples] == list(range(len(rows)))
        assert all(same_sample(s, rows[int(s["id"])]) for s in samples)
