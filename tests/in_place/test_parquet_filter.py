"""A Parquet row filter: applied before the epoch is planned, so the order equals an MDS
dataset of the kept rows, resumption is exact, and only the filter's columns download."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pq_data import table, write_parquet

from streamx import MDSWriter, ParquetStream, StreamingDataset
from streamx.base.util import merge_index
from streamx.storage import accounting

# Rows 0..99 in row groups of 16: ids under 20, or of 60 and more but 70, are kept: the
# second row group keeps 4 (16..19), the third none (32..47), the fourth 4 (60..63).
KEEP = (pc.field("id") < 20) | ((pc.field("id") >= 60) & (pc.field("w2") != "70" * 20))
KEPT = [i for i in range(100) if i < 20 or (i >= 60 and i != 70)]


def _kept_groups(rows: int, group: int) -> list[list[int]]:
    groups = [[i for i in KEPT if start <= i < start + group] for start in range(0, rows, group)]
    return [g for g in groups if g]


def _mds_of(out: Path, groups: list[list[int]]) -> None:
    for number, ids in enumerate(groups):
        with MDSWriter(out=str(out / f"part{number:04d}"), columns={"id": "int"}) as writer:
            for i in ids:
                writer.write({"id": i})
    merge_index(str(out), keep_local=True)


def _ids(ds: StreamingDataset, limit: int | None = None) -> list[int]:
    out: list[int] = []
    for sample in ds:
        out.append(int(sample["id"]))
        if len(out) == limit:
            break
    return out


def _filtered(source: Path, local: Path, filters: Any = KEEP, **kwargs: Any) -> StreamingDataset:
    stream = ParquetStream(
        remote=str(source), local=str(local), columns=["id", "text"], filters=filters
    )
    kwargs.setdefault("batch_size", 4)
    return StreamingDataset(streams=[stream], **kwargs)


@pytest.mark.parametrize("algo", ["py1e", "py1br", "naive"])
def test_order_equals_mds_of_the_kept_rows(tmp_path: Path, algo: str) -> None:
    write_parquet(str(tmp_path / "t.parquet"), 100, 16)
    groups = _kept_groups(100, 16)
    _mds_of(tmp_path / "mds", groups)
    kwargs: dict[str, Any] = {
        "shuffle": True,
        "shuffle_seed": 9,
        "shuffle_algo": algo,
        "batch_size": 4,
        "num_canonical_nodes": 2,
    }
    ours = _filtered(tmp_path / "t.parquet", tmp_path / "c", **kwargs)
    assert ours.samples_per_shard.tolist() == [len(g) for g in groups]
    reference = StreamingDataset(local=str(tmp_path / "mds"), **kwargs)
    got = _ids(ours)
    assert got == _ids(reference)
    assert set(got) == set(KEPT)
    assert all(ours[k]["text"] == f"row {i}" for k, i in enumerate(KEPT))


def test_resume_lands_on_the_same_kept_rows(tmp_path: Path) -> None:
    write_parquet(str(tmp_path / "t.parquet"), 100, 16)

    def make() -> StreamingDataset:
        return _filtered(
            tmp_path / "t.parquet", tmp_path / "c", shuffle=True, shuffle_seed=2, batch_size=3
        )

    full = _ids(make())
    partial = make()
    head = _ids(partial, limit=25)
    state = json.loads(json.dumps(partial.state_dict(25, False)))
    resumed = make()
    resumed.load_state_dict(state)
    assert head + _ids(resumed) == full


def test_tuples_and_expressions_agree(tmp_path: Path) -> None:
    write_parquet(str(tmp_path / "t.parquet"), 100, 16)
    by_tuples = _filtered(tmp_path / "t.parquet", tmp_path / "c1", [("id", ">=", 90)])
    by_expression = _filtered(tmp_path / "t.parquet", tmp_path / "c2", pc.field("id") >= 90)
    assert [s["id"] for s in by_tuples] == [s["id"] for s in by_expression] == list(range(90, 100))


def test_two_filters_over_one_cache_never_mix(tmp_path: Path) -> None:
    write_parquet(str(tmp_path / "t.parquet"), 100, 16)
    low = _filtered(tmp_path / "t.parquet", tmp_path / "c", [("id", "<", 10)])
    high = _filtered(tmp_path / "t.parquet", tmp_path / "c", [("id", ">=", 95)])
    assert sorted(s["id"] for s in low) == list(range(10))
    assert sorted(s["id"] for s in high) == list(range(95, 100))
    again = _filtered(tmp_path / "t.parquet", tmp_path / "c", [("id", "<", 10)])
    assert sorted(s["id"] for s in again) == list(range(10))


def test_only_the_filter_columns_download_and_only_once(s3: Any, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    pq.write_table(table(2000), buffer, row_group_size=500)
    s3.put("flt/t.parquet", buffer.getvalue())
    size = len(buffer.getvalue())
    accounting.reset()
    keep = (pc.field("w0") < 600) | (pc.field("w0") >= 3900)  # ids under 300 or from 1950
    ds = _filtered(s3.url("flt/t.parquet"), tmp_path / "c", keep)
    built = accounting.totals()["bytes_received"]
    assert ds.samples_per_shard.tolist() == [300, 50]
    assert sorted(s["id"] for s in ds) == list(range(300)) + list(range(1950, 2000))
    assert 0 < built < 0.1 * size  # the footer and the narrow w0 column, not the table
    accounting.reset()
    again = _filtered(s3.url("flt/t.parquet"), tmp_path / "c", keep)
    assert again.num_samples == ds.num_samples
    assert accounting.totals()["bytes_received"] == 0  # footers and kept rows cached


def test_a_filter_on_a_missing_column_is_named(tmp_path: Path) -> None:
    write_parquet(str(tmp_path / "t.parquet"), 20, 10)
    with pytest.raises(ValueError, match=r"row filter .*nope.* does not apply to .*t\.parquet"):
        _filtered(tmp_path / "t.parquet", tmp_path / "c", pc.field("nope") > 1)
    with pytest.raises(ValueError, match=r"`filters` must be a pyarrow expression"):
        _filtered(tmp_path / "t.parquet", tmp_path / "c", "id > 3")


def test_kept_rows_are_numbered_within_each_row_group(tmp_path: Path) -> None:
    write_parquet(str(tmp_path / "t.parquet"), 100, 16)
    ds = _filtered(tmp_path / "t.parquet", tmp_path / "c")
    kept = sorted((tmp_path / "c" / "streamx-parquet").glob("*.kept.npz"))
    assert len(kept) == 1
    with np.load(kept[0]) as found:
        assert found["rg1"].tolist() == [0, 1, 2, 3]  # ids 16..19
        assert found["rg2"].tolist() == []  # ids 32..47: no shard
        assert found["rg4"].tolist() == [i for i in range(16) if i != 6]  # 64..79 but 70
    assert ds.num_samples == len(KEPT)
