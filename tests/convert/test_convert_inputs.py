"""Every input kind of the one-machine converter, on a small generated input, read back by
streamx and mosaicml-streaming."""

from __future__ import annotations

import io
import json
import os
import tarfile
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from convert_helpers import read_both, tree_bytes
from PIL import Image

from streamx.convert import convert, optimize

ROWS = 60


def _table() -> pa.Table:
    return pa.table(
        {
            "text": [f"row {i} é" for i in range(ROWS)],
            "id": pa.array(range(ROWS), pa.int64()),
            "score": pa.array([i / 4 for i in range(ROWS)], pa.float32()),
            "emb": pa.array([[i, i + 1.5] for i in range(ROWS)], pa.list_(pa.float32(), 2)),
        }
    )


def _check_table_rows(rows: list[dict[str, Any]]) -> None:
    assert [r["text"] for r in rows] == [f"row {i} é" for i in range(ROWS)]
    assert [int(r["id"]) for r in rows] == list(range(ROWS))
    assert [float(r["score"]) for r in rows] == [i / 4 for i in range(ROWS)]
    assert [r["emb"].tolist() for r in rows] == [[i, i + 1.5] for i in range(ROWS)]


def test_parquet_files_split_by_row_group(tmp_path: Any) -> None:
    table = _table()
    os.makedirs(tmp_path / "in")
    pq.write_table(table.slice(0, 40), tmp_path / "in" / "a.parquet", row_group_size=15)
    pq.write_table(table.slice(40), tmp_path / "in" / "b.parquet")
    result = convert(str(tmp_path / "in"), str(tmp_path / "out"), num_workers=2, progress=False)
    assert (result.parts, result.samples) == (4, ROWS)
    assert result.columns == {
        "text": "str",
        "id": "int64",
        "score": "float32",
        "emb": "ndarray:float32:2",
    }
    _check_table_rows(read_both(str(tmp_path / "out")))


def test_arrow_file_and_stream(tmp_path: Any) -> None:
    table = _table()
    os.makedirs(tmp_path / "in")
    with pa.ipc.new_file(str(tmp_path / "in" / "a.arrow"), table.schema) as writer:
        writer.write_table(table.slice(0, 30))
    with pa.ipc.new_stream(str(tmp_path / "in" / "b.arrow"), table.schema) as writer:
        writer.write_table(table.slice(30))
    convert(str(tmp_path / "in"), str(tmp_path / "out"), num_workers=2, progress=False)
    _check_table_rows(read_both(str(tmp_path / "out")))


def test_jsonl_and_csv(tmp_path: Any) -> None:
    rows = [{"text": f"line {i}", "n": i, "vec": [i, i * 2]} for i in range(ROWS)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = convert(str(tmp_path / "in.jsonl"), str(tmp_path / "j"), progress=False)
    assert result.columns == {"text": "str", "n": "int64", "vec": "ndarray:int64"}
    back = read_both(str(tmp_path / "j"))
    assert [(r["text"], int(r["n"]), r["vec"].tolist()) for r in back] == [
        (r["text"], r["n"], r["vec"]) for r in rows
    ]
    pacsv.write_csv(pa.table({"a": ["x", "y"], "b": [1.5, 2.5]}), tmp_path / "in.csv")
    convert(str(tmp_path / "in.csv"), str(tmp_path / "c"), format="csv", progress=False)
    assert [(r["a"], float(r["b"])) for r in read_both(str(tmp_path / "c"))] == [
        ("x", 1.5),
        ("y", 2.5),
    ]


def _jpeg(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 255, (8, 8, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG")
    return out.getvalue()


def test_image_folder(tmp_path: Any) -> None:
    expected = []
    for label, name in enumerate(["cat", "dog"]):
        os.makedirs(tmp_path / "imgs" / name)
        for i in range(5):
            data = _jpeg(label * 10 + i)
            (tmp_path / "imgs" / name / f"{i}.jpg").write_bytes(data)
            expected.append((data, label))
    result = convert(
        str(tmp_path / "imgs"),
        str(tmp_path / "out"),
        rows_per_part=3,
        num_workers=2,
        progress=False,
    )
    assert result.parts == 4
    rows = read_both(str(tmp_path / "out"))
    assert [(r["image"].tobytes(), r["label"]) for r in rows] == [
        (Image.open(io.BytesIO(d)).tobytes(), label) for d, label in expected
    ]
    index = json.loads((tmp_path / "out" / "part-00000" / "index.json").read_text())
    shard = tmp_path / "out" / "part-00000" / index["shards"][0]["raw_data"]["basename"]
    assert expected[0][0] in shard.read_bytes()  # stored as the original file bytes


def test_webdataset_tars(tmp_path: Any) -> None:
    os.makedirs(tmp_path / "wds")
    for shard in range(2):
        with tarfile.open(tmp_path / "wds" / f"s-{shard}.tar", "w") as tar:
            for i in range(4):
                key = f"sample{shard * 4 + i:04d}"
                for ext, data in (
                    ("jpg", _jpeg(i)),
                    ("cls", str(i % 2).encode()),
                    ("txt", f"caption {key}".encode()),
                ):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    result = convert(str(tmp_path / "wds"), str(tmp_path / "out"), num_workers=2, progress=False)
    assert result.columns == {"jpg": "jpeg", "cls": "int", "txt": "str"}
    rows = read_both(str(tmp_path / "out"))
    assert [r["txt"] for r in rows] == [f"caption sample{i:04d}" for i in range(8)]
    assert [r["cls"] for r in rows] == [i % 2 for i in range(4)] * 2


def _lit_sample(i: int) -> dict[str, Any]:
    return {"id": i, "text": f"t{i}", "arr": np.arange(3, dtype=np.float32) + i}


def test_litdata_chunks(tmp_path: Any) -> None:
    litdata = pytest.importorskip("litdata")
    litdata.optimize(
        _lit_sample,
        list(range(12)),
        output_dir=str(tmp_path / "lit"),
        num_workers=1,
        chunk_size=5,
        verbose=False,
    )
    result = convert(str(tmp_path / "lit"), str(tmp_path / "out"), num_workers=2, progress=False)
    assert (result.parts, result.samples) == (3, 12)
    rows = read_both(str(tmp_path / "out"))
    assert [(r["id"], r["text"], r["arr"].tolist()) for r in rows] == [
        (i, f"t{i}", [i, i + 1, i + 2]) for i in range(12)
    ]


def test_hugging_face_dataset_and_saved(tmp_path: Any) -> None:
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_dict(
        {"text": [f"h{i}" for i in range(ROWS)], "label": list(range(ROWS))}
    ).shuffle(seed=3)
    expected = [(r["text"], r["label"]) for r in dataset]
    convert(dataset, str(tmp_path / "mem"), rows_per_part=25, num_workers=2, progress=False)
    got = [(r["text"], int(r["label"])) for r in read_both(str(tmp_path / "mem"))]
    assert got == expected
    dataset.save_to_disk(str(tmp_path / "saved"))
    convert(str(tmp_path / "saved"), str(tmp_path / "disk"), rows_per_part=25, progress=False)
    assert tree_bytes(str(tmp_path / "disk")) == tree_bytes(str(tmp_path / "mem"))


def _pairs(i: int) -> Any:
    for j in range(2):
        yield {"input": i, "copy": j, "blob": bytes([i, j])}


def test_optimize_function_over_inputs(tmp_path: Any) -> None:
    result = optimize(_pairs, range(10), str(tmp_path / "out"), num_workers=2, progress=False)
    assert result.columns == {"input": "int", "copy": "int", "blob": "bytes"}
    rows = read_both(str(tmp_path / "out"))
    assert [(r["input"], r["copy"], r["blob"]) for r in rows] == [
        (i, j, bytes([i, j])) for i in range(10) for j in range(2)
    ]


def test_same_shards_whatever_the_workers(tmp_path: Any) -> None:
    table = _table()
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=7)
    for workers in (1, 3):
        convert(
            str(tmp_path / "t.parquet"),
            str(tmp_path / f"w{workers}"),
            num_workers=workers,
            compression="zstd",
            hashes=["sha1"],
            size_limit=500,
            progress=False,
        )
    one, three = tree_bytes(str(tmp_path / "w1")), tree_bytes(str(tmp_path / "w3"))
    assert len(one) > 10
    assert one == three


def test_spawned_workers_get_the_source_pickled(tmp_path: Any) -> None:
    pq.write_table(_table(), tmp_path / "t.parquet", row_group_size=20)
    convert(
        str(tmp_path / "t.parquet"),
        str(tmp_path / "spawn"),
        num_workers=2,
        start_method="spawn",
        progress=False,
    )
    convert(
        str(tmp_path / "t.parquet"),
        str(tmp_path / "fork"),
        num_workers=2,
        start_method="fork",
        progress=False,
    )
    assert tree_bytes(str(tmp_path / "spawn")) == tree_bytes(str(tmp_path / "fork"))
    _check_table_rows(read_both(str(tmp_path / "spawn")))
