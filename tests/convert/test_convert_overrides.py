"""Overrides reach the columns that inference rejects: they are applied before inference.

The input is a JSONL file whose ``tags`` column holds lists of strings, a type no MDS
encoding is inferred for.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from convert_helpers import read_both

from streamx import StreamingDataset
from streamx.convert import ConvertError, convert

TAGS = [["a", "b"], [], ["ç", "d", "e"], ["x"]]
ADVICE = (
    "Column 'tags' has Arrow type list<item: string>, which no MDS encoding is inferred for; "
    "name one: `-c tags=json` with streamx convert, or overrides={'tags': 'json'} in Python "
    "('json' stores lists and dicts of plain values, 'pkl' any Python value)."
)


def write_jsonl(path: Path) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i, tags in enumerate(TAGS):
            f.write(json.dumps({"id": i, "tags": tags}) + "\n")
    return path


def test_no_override_gives_the_exact_advice(tmp_path: Path) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl")
    with pytest.raises(TypeError) as info:
        convert(str(rows), str(tmp_path / "out"), progress=False)
    assert str(info.value) == ADVICE


@pytest.mark.parametrize("encoding", ["json", "pkl"])
def test_override_reaches_the_rejected_column(tmp_path: Path, encoding: str) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl")
    out = tmp_path / "out"
    result = convert(str(rows), str(out), overrides={"tags": encoding}, progress=False)
    assert result.columns == {"id": "int64", "tags": encoding}
    # pkl is an unsafe type: readers refuse it unless told (mosaicml-streaming's rule too).
    read = (
        read_both(str(out))
        if encoding == "json"
        else list(StreamingDataset(local=str(out), batch_size=1, allow_unsafe_types=True))
    )
    assert [r["tags"] for r in read] == TAGS
    assert [int(r["id"]) for r in read] == list(range(len(TAGS)))


def test_str_override_reaches_the_column_and_names_the_row(tmp_path: Path) -> None:
    """``str`` is applied too; a list is not a string, so the writer says which row and
    column, not the inference advice."""
    rows = write_jsonl(tmp_path / "rows.jsonl")
    with pytest.raises(ConvertError) as info:
        convert(str(rows), str(tmp_path / "out"), overrides={"tags": "str"}, progress=False)
    message = str(info.value)
    assert message.startswith(f"{rows}, row 0: column 'tags' (str) cannot store ['a', 'b']")
    assert "inferred" not in message


def test_columns_replace_inference_entirely(tmp_path: Path) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl")
    result = convert(
        str(rows), str(tmp_path / "out"), columns={"id": "int", "tags": "json"}, progress=False
    )
    assert result.columns == {"id": "int", "tags": "json"}
    assert [r["tags"] for r in read_both(str(tmp_path / "out"))] == TAGS


def test_override_of_a_missing_column_is_refused(tmp_path: Path) -> None:
    rows = write_jsonl(tmp_path / "rows.jsonl")
    with pytest.raises(ValueError, match=r"Overrides name columns \['nope'\]"):
        convert(str(rows), str(tmp_path / "out"), overrides={"nope": "json"}, progress=False)
