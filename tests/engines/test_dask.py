"""streamx.dask.to_mds on a real Dask local cluster (2 worker processes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
from engine_data import ids_of, make_rows, read_mosaic, read_streamx, same_sample  # noqa: E402

from streamx.base.converters.partition import ConvertRowError  # noqa: E402
from streamx.dask import to_mds  # noqa: E402

# A Dask cluster of worker processes takes long to start: these run with `make test-full`.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def client(engine_s3: Any) -> Iterator[Any]:
    # Dask turns object columns (bytes, lists) into strings unless told not to.
    with dask.config.set({"dataframe.convert-string": False}):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        with distributed.Client(cluster) as c:
            yield c
        cluster.close()


def _frame(partitions: int = 3) -> dd.DataFrame:
    return dd.from_pandas(pd.DataFrame(make_rows()), npartitions=partitions)


def test_local_and_read_back(client: Any, tmp_path: Any) -> None:
    out = str(tmp_path / "ds")
    assert to_mds(_frame(), out, columns={"id": "int"}, size_limit=800) == out
    assert sorted(os.listdir(out)) == ["0", "1", "2", "index.json"]
    for samples in (read_streamx(None, out), read_mosaic(None, out)):
        assert ids_of(samples) == list(range(len(make_rows())))
        assert all(same_sample(s, make_rows()[int(s["id"])]) for s in samples)
    # Partition order is index order.
    assert [int(s["id"]) for s in read_streamx(None, out)] == list(range(len(make_rows())))


def test_remote(client: Any, engine_s3: Any) -> None:
    out = engine_s3.url("dask/ds")
    to_mds(_frame(2), out)
    for samples in (read_streamx(out), read_mosaic(out)):
        assert ids_of(samples) == list(range(len(make_rows())))


def test_bad_row_names_partition_and_row(client: Any, tmp_path: Any) -> None:
    frame = pd.DataFrame({"n": [*range(7), -1, 8, 9]})
    out = str(tmp_path / "bad")
    with pytest.raises(ConvertRowError, match=r"Dask partition 1, row 2: .*-1 out of bounds"):
        to_mds(dd.from_pandas(frame, npartitions=2), out, columns={"n": "uint8"})
    assert not os.path.exists(os.path.join(out, "index.json"))
    assert "1" not in os.listdir(out)  # the failed partition removed its files


def test_uninferable_column_is_named(client: Any, tmp_path: Any) -> None:
    frame = pd.DataFrame({"id": [1, 2], "when": pd.to_datetime(["2020-01-01", "2020-01-02"])})
    with pytest.raises(TypeError, match="'when'"):
        to_mds(dd.from_pandas(frame, npartitions=1), str(tmp_path / "t"))
