"""streamx.ray on a real Ray local cluster with 2 CPUs, started once for the module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray")

import numpy as np  # noqa: E402
from engine_data import ids_of, make_rows, read_mosaic, read_streamx, same_sample  # noqa: E402

from streamx.base.converters.partition import ConvertRowError  # noqa: E402
from streamx.ray import MDSDatasink, read_mds  # noqa: E402

# A Ray cluster takes long to start: these run with `make test-full`.
pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.slow,
    pytest.mark.timeout(900),
]


@pytest.fixture(scope="module")
def ray_cluster(engine_s3: Any) -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield
    ray.shutdown()


def _dataset(blocks: int = 3) -> Any:
    return ray.data.from_items(make_rows()).repartition(blocks)


def test_datasink_local_and_read_back(ray_cluster: None, tmp_path: Any) -> None:
    out = str(tmp_path / "ds")
    _dataset().write_datasink(MDSDatasink(out, columns={"id": "int"}, size_limit=800))
    parts = sorted(p for p in os.listdir(out) if p != "index.json")
    assert len(parts) == 3 and "index.json" in os.listdir(out)
    for samples in (read_streamx(None, out), read_mosaic(None, out)):
        assert ids_of(samples) == list(range(len(make_rows())))
        assert all(same_sample(s, make_rows()[int(s["id"])]) for s in samples)
    back = read_mds(out).take_all()
    assert sorted(int(r["id"]) for r in back) == list(range(len(make_rows())))
    row = next(r for r in back if int(r["id"]) == 5)
    assert row["text"] == make_rows()[5]["text"] and np.array_equal(row["vec"], [5, 6, 7])


def test_datasink_remote_and_read_mds_remote(ray_cluster: None, engine_s3: Any) -> None:
    out = engine_s3.url("ray/ds")
    _dataset(2).write_datasink(MDSDatasink(out))
    for samples in (read_streamx(out), read_mosaic(out)):
        assert ids_of(samples) == list(range(len(make_rows())))
    assert sorted(int(r["id"]) for r in read_mds(out).take_all()) == list(range(len(make_rows())))


def test_bad_row_names_task_and_row(ray_cluster: None, tmp_path: Any) -> None:
    items = [{"n": i} for i in range(6)] + [{"n": -1}]
    out = str(tmp_path / "bad")
    with pytest.raises(ConvertRowError, match=r"Ray write task 0, row 6: .*-1 out of bounds"):
        ray.data.from_items(items).repartition(1).write_datasink(
            MDSDatasink(out, columns={"n": "uint8"})
        )
    assert not os.path.exists(os.path.join(out, "index.json"))
    assert os.listdir(out) == []
