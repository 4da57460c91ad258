"""One encoding table: Rust's names, Python's registry, and user encodings over both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streamx
from streamx import _core
from streamx.format import encodings
from streamx.format.columns import native_kind
from streamx.format.encodings import BUILTIN_ENCODINGS, Encoding, _encodings


def test_python_registry_and_rust_list_the_same_encodings() -> None:
    assert set(_core.mds_encoding_names()) == set(BUILTIN_ENCODINGS)
    native = set(_core.native_encoding_names())
    assert native <= set(BUILTIN_ENCODINGS)
    assert {"bytes", "str", "int", "str_int", "uint8", "float64"} <= native
    assert native.isdisjoint({"pkl", "json", "jpeg", "ndarray", "str_float"})


class Complex128(Encoding):
    """mosaicml-streaming's documented custom-encoding example."""

    def encode(self, obj: Any) -> bytes:
        return np.complex128(obj).tobytes()

    def decode(self, data: bytes) -> Any:
        return np.frombuffer(data, np.complex128)[0]


def test_documented_custom_encoding_round_trips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(_encodings, "complex128", Complex128)
    values = [complex(i, -i) for i in range(20)]
    with streamx.MDSWriter(out=str(tmp_path), columns={"z": "complex128"}) as writer:
        for value in values:
            writer.write({"z": value})
    dataset = streamx.LocalDataset(str(tmp_path))
    assert [complex(dataset[i]["z"]) for i in range(len(values))] == values


class OffsetInt(Encoding):
    """A user's `int` that stores value + 1000 and decodes to a str, so its use shows."""

    size = 8

    def encode(self, obj: Any) -> bytes:
        return np.int64(obj + 1000).tobytes()

    def decode(self, data: bytes) -> Any:
        return f"user:{int(np.frombuffer(data, np.int64)[0]) - 1000}"


def test_custom_class_under_a_builtin_name_is_used_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(_encodings, "int", OffsetInt)
    assert native_kind("int") == "raw"
    with streamx.MDSWriter(out=str(tmp_path), columns={"n": "int", "s": "str"}) as writer:
        for i in range(5):
            writer.write({"n": i, "s": str(i)})
    dataset = streamx.LocalDataset(str(tmp_path))
    assert [dataset[i]["n"] for i in range(5)] == [f"user:{i}" for i in range(5)]
    assert dataset[3]["s"] == "3"  # other columns stay on the Rust path
    monkeypatch.setitem(_encodings, "int", BUILTIN_ENCODINGS["int"])
    assert native_kind("int") == "int"
    # The bytes on disk are the user's: read with the built-in class, they show the offset.
    assert [streamx.LocalDataset(str(tmp_path))[i]["n"] for i in range(5)] == [
        1000 + i for i in range(5)
    ]


def test_override_is_seen_by_the_module_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_encodings, "int", OffsetInt)
    assert encodings.mds_decode("int", encodings.mds_encode("int", 7)) == "user:7"
    assert encodings.get_mds_encoded_size("int") == 8
