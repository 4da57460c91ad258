"""streamx.ray on a real Ray local cluster with 2 CPUs (``ray_cluster``, started once for
the module)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

ray = pytest.importorskip("ray")

import numpy as np  # noqa: E402
from engine_data import ids_of, make_rows, read_mosaic, read_streamx, same_sample  # noqa: E402

from streamx.engines.partition import ConvertRowError  # noqa: E402
from streamx.ray import MDSDatasink, read_mds  # noqa: E402

# The first test also waits for the cluster to start, which takes long on a loaded machine.
pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning"), pytest.mark.timeout(600)]


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


def test_a_task_killed_mid_write_is_retried_whole(ray_cluster: None, tmp_path: Any) -> None:
    """A write task whose worker dies mid-way (``os._exit`` once blocks were written) is
    run again by Ray into the same directory: the retry replaces the first attempt's files,
    and the dataset holds every row once."""
    marker = str(tmp_path / "died")

    def rows(batch: dict[str, Any]) -> dict[str, Any]:
        if 45 in batch["id"] and not os.path.exists(marker):  # the workers cannot import
            open(marker, "w").close()  # engine_data: its die_once, here
            os._exit(1)
        return batch

    out = str(tmp_path / "killed")
    items = [{"id": i} for i in range(60)]
    ds = ray.data.from_items(items).repartition(1).map_batches(rows, batch_size=5)
    ds.write_datasink(MDSDatasink(out, columns={"id": "int"}, size_limit=64))
    assert os.path.exists(marker)  # a worker did die mid-write
    (part,) = [name for name in os.listdir(out) if name != "index.json"]
    with open(os.path.join(out, part, "index.json")) as f:
        shards = json.load(f)["shards"]
    listed = {(shard["zip_data"] or shard["raw_data"])["basename"] for shard in shards}
    # Read before the dataset is: reading decompresses shards into the same directory.
    assert set(os.listdir(os.path.join(out, part))) == listed | {"index.json"}
    assert ids_of(read_streamx(None, out)) == list(range(60))


@pytest.mark.slow
def test_sweep_many_blocks_and_shards(ray_cluster: None, tmp_path: Any) -> None:
    """Many write tasks of many compressed, hashed shards: every row comes back from both
    libraries and from read_mds, and the index lists the tasks in order."""
    rows = make_rows(3000)
    out = str(tmp_path / "ds")
    sink = MDSDatasink(out, size_limit=4096, compression="zstd", hashes=["sha1", "xxh64"])
    ray.data.from_items(rows).repartition(8).write_datasink(sink)
    with open(os.path.join(out, "index.json")) as f:
        parts = [s["raw_data"]["basename"].split("/")[0] for s in json.load(f)["shards"]]
    assert len(parts) > 16 and parts == sorted(parts) and len(set(parts)) == 8
    for samples in (read_streamx(None, out), read_mosaic(None, out)):
        assert ids_of(samples) == list(range(len(rows)))
        assert all(same_sample(s, rows[int(s["id"])]) for s in samples)
    back = read_mds(out).take_all()
    assert sorted(int(r["id"]) for r in back) == list(range(len(rows)))
