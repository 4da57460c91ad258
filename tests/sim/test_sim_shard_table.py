"""``load_shards`` reads sizes from the index's columns: the same table as from its entries.

Every shard's samples, raw size (data and meta files) and compressed size (0 without one),
as :class:`ShardInfo` gives them, for plain, compressed, meta-file (JSON) and mixed
indexes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sim_oracle import write_index

from streamx import JSONWriter, MDSWriter
from streamx.format.in_place import in_place_kind
from streamx.format.index import parse_index
from streamx.sim import ShardTable, load_shards


def _from_entries(root: Path) -> ShardTable:
    shards = parse_index(str(root), None, str(root / "index.json"))
    return ShardTable(
        np.array([s.samples for s in shards], np.int64),
        np.array([s.get_raw_size() for s in shards], np.int64),
        np.array([s.get_zip_size() or 0 for s in shards], np.int64),
    )


def _assert_table(root: Path) -> ShardTable:
    got, want = load_shards(str(root)), _from_entries(root)
    for name in ("samples", "raw_bytes", "zip_bytes"):
        assert getattr(got, name).dtype == np.int64
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    return got


def test_plain_and_compressed(tmp_path: Path) -> None:
    write_index(tmp_path / "plain", [1000, 1000, 700], [20_000, 20_000, 14_000])
    assert _assert_table(tmp_path / "plain").zip_bytes.tolist() == [0, 0, 0]
    write_index(tmp_path / "zip", [5, 6, 7, 8], [500, 600, 700, 800], [90, 0, 70, 80])
    table = _assert_table(tmp_path / "zip")
    assert table.zip_bytes.tolist() == [90, 0, 70, 80]


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_written_datasets(tmp_path: Path, compression: str | None) -> None:
    mds, jsn = tmp_path / "mds", tmp_path / "json"
    with MDSWriter(
        out=str(mds), columns={"x": "bytes"}, compression=compression, size_limit=1 << 14
    ) as writer:
        for i in range(300):
            writer.write({"x": bytes([i % 7]) * (i % 200)})
    with JSONWriter(
        out=str(jsn), columns={"x": "str"}, compression=compression, size_limit=1 << 12
    ) as writer:
        for i in range(300):
            writer.write({"x": "y" * (i % 90)})
    assert len(_assert_table(mds).samples) > 1
    table = _assert_table(jsn)  # JSON shards have meta files: raw is data plus meta
    entries = json.loads((jsn / "index.json").read_text())["shards"]
    assert all(e["raw_meta"] for e in entries)
    assert table.raw_bytes[0] == entries[0]["raw_data"]["bytes"] + entries[0]["raw_meta"]["bytes"]


def test_empty_compressed_files(tmp_path: Path) -> None:
    # A zip file of 0 bytes adds nothing: the table has 0 there, as from the entries.
    write_index(tmp_path, [3, 3], [300, 300])
    index = json.loads((tmp_path / "index.json").read_text())
    index["shards"][0]["compression"] = "zstd"
    index["shards"][0]["zip_data"] = {"basename": "shard.00000.mds.zstd", "bytes": 0}
    (tmp_path / "index.json").write_text(json.dumps(index))
    assert _assert_table(tmp_path).zip_bytes.tolist() == [0, 0]


def test_kind_of_an_index_directory(tmp_path: Path) -> None:
    # A plain MDS directory is told apart from LitData's by its bytes (no Python parse of a
    # large index); an index that might hold LitData's keys, literally or escaped, is parsed.
    write_index(tmp_path / "mds", [3, 3], [300, 300])
    index = json.loads((tmp_path / "mds" / "index.json").read_text())
    extras: list[tuple[str, dict[str, object]]] = [
        ("keys", {"chunks": [], "config": {}}),
        ("escaped", {"\\u0063hunks": [], "config": {}}),
    ]
    for name, extra in extras:
        (tmp_path / name).mkdir()
        text = json.dumps({**index, **extra}).replace('"\\\\u0063', '"\\u0063')
        (tmp_path / name / "index.json").write_text(text)
        assert in_place_kind(str(tmp_path / name), "auto") == "litdata", name
    # Both keys spelled inside values of an MDS index: parsed, and still MDS.
    (tmp_path / "lookalike").mkdir()
    named = {**index, "note": ["chunks", "config"]}
    (tmp_path / "lookalike" / "index.json").write_text(json.dumps(named))
    for target in (tmp_path / "mds", tmp_path / "lookalike", tmp_path / "nothing"):
        assert in_place_kind(str(target), "auto") is None
