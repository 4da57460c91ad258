"""Fuzzing index.json parsing: arbitrary JSON never escapes as anything but a clear error."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamx.format.index import parse_index

_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
_KEYS = ("column_encodings", "column_names", "column_sizes", "compression", "format", "hashes",
         "raw_data", "samples", "size_limit", "version", "zip_data")  # fmt: skip
_VALID = {
    "column_encodings": ["int"], "column_names": ["id"], "column_sizes": [8], "compression": None,
    "format": "mds", "hashes": [],
    "raw_data": {"basename": "shard.00000.mds", "bytes": 20, "hashes": {}},
    "samples": 1, "size_limit": 100, "version": 2, "zip_data": None,
}  # fmt: skip


def _parse(obj: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "index.json")
        with open(path, "w") as file:
            json.dump(obj, file)
        try:
            parse_index(tmp, None, path)
        except ValueError:
            pass  # json.JSONDecodeError is a ValueError too


@settings(max_examples=120, deadline=None)
@given(_VALUES)
def test_arbitrary_json_gives_value_error(obj: Any) -> None:
    _parse(obj)
    _parse({"version": 2, "shards": obj})
    _parse({"version": 2, "shards": [obj]})


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(_KEYS), _VALUES)
def test_one_bad_field_gives_value_error(key: str, value: Any) -> None:
    entry = dict(_VALID)
    entry[key] = value
    _parse({"version": 2, "shards": [entry]})
