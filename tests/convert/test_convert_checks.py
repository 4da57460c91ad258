"""What the converter refuses to write silently: integers beyond int64 turned into rounded
floats by inference, and images that do not decode."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from convert_helpers import read_both
from PIL import Image

from streamx.convert import ConvertError, convert

BIG = 2**64 + 1  # a float64 would round it to 2**64


def test_jsonl_int_beyond_int64_widens_to_str_int(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    ids = [0, 1, BIG, -(2**70)]
    rows.write_text("".join(json.dumps({"id": i, "x": 0.5}) + "\n" for i in ids))
    result = convert(str(rows), str(tmp_path / "out"), progress=False)
    assert result.columns == {"id": "str_int", "x": "float64"}
    assert [r["id"] for r in read_both(str(tmp_path / "out"))] == ids


def test_jsonl_floats_stay_floats(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"v": v}) + "\n" for v in [1, 2.5, BIG]))
    assert convert(str(rows), str(tmp_path / "out"), progress=False).columns == {"v": "float64"}


def test_jsonl_big_int_past_the_inferred_lines_is_an_error(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": i}) + "\n" for i in [*range(1500), BIG]))
    with pytest.raises(ConvertError) as info:
        convert(str(rows), str(tmp_path / "out"), progress=False)
    assert str(info.value).startswith(f"{rows}, row 1500: column 'id' (int64) cannot store {BIG}")


def test_csv_int_beyond_int64_is_an_error(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("id,name\n1,a\n2,b\n" + f"{BIG},c\n")
    with pytest.raises(ConvertError) as info:
        convert(str(rows), str(tmp_path / "out"), progress=False)
    assert str(info.value).startswith(
        f"{rows}, row 2: column 'id' holds the integer {BIG}, beyond int64"
    )
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def _image(kind: str, seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 255, (32, 32, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, kind)
    return out.getvalue()


@pytest.mark.parametrize("kind", ["JPEG", "PNG"])
def test_an_image_that_does_not_decode_stops_the_conversion(tmp_path: Path, kind: str) -> None:
    suffix = ".jpg" if kind == "JPEG" else ".png"
    for i in range(4):
        folder = tmp_path / "in" / f"c{i % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i}{suffix}").write_bytes(_image(kind, i))
    good = convert(str(tmp_path / "in"), str(tmp_path / "ok"), progress=False)
    assert good.samples == 4
    bad = tmp_path / "in" / "c1" / f"3{suffix}"
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])  # truncated: its header still reads
    with pytest.raises(ConvertError) as info:
        convert(str(tmp_path / "in"), str(tmp_path / "out"), progress=False)
    assert str(info.value).startswith(f"Image {bad} does not decode (")
