"""Writer errors name the fact: the missing column and the sample's index, the column whose
range a number leaves. The exception types stay mosaicml-streaming's (KeyError,
OverflowError)."""

from __future__ import annotations

from pathlib import Path

import pytest

import streamx
from streamx.exceptions import StreamxError


@pytest.mark.parametrize("encoding", ["str", "pkl", "int"])
def test_missing_column_names_it_and_the_sample(tmp_path: Path, encoding: str) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"a": "int", "b": encoding}) as writer:
        writer.write({"a": 0, "b": 5 if encoding == "int" else "x"})
        with pytest.raises(KeyError) as info:
            writer.write({"a": 1})
    assert isinstance(info.value, StreamxError)
    assert str(info.value) == (
        "Sample 1 lacks column(s) ['b']; the writer's columns are ['a', 'b'] and the sample "
        "has ['a']."
    )


@pytest.mark.parametrize("writer_class", [streamx.JSONWriter, streamx.CSVWriter])
def test_text_writers_name_the_missing_column(tmp_path: Path, writer_class: type) -> None:
    with (
        writer_class(out=str(tmp_path), columns={"a": "int", "b": "str"}) as writer,
        pytest.raises(KeyError, match=r"lacks column\(s\) \['b'\]"),
    ):
        writer.write({"a": 1})


@pytest.mark.parametrize(
    ("encoding", "value"), [("uint8", 256), ("uint8", -1), ("int8", 128), ("int", 2**63)]
)
def test_overflow_names_the_column_and_the_sample(
    tmp_path: Path, encoding: str, value: int
) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"id": "str", "n": encoding}) as writer:
        writer.write({"id": "first", "n": 1})
        with pytest.raises(OverflowError) as info:
            writer.write({"id": "second", "n": value})
    message = str(info.value)
    assert message.startswith(
        f"Column 'n' has encoding '{encoding}', whose range does not hold {value}:"
    ), message
    assert message.endswith("(sample 1)"), message
