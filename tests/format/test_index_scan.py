"""A large index bad in its last entry, as the core's scanner of the usual layout reads it
up to there: every fault raises the error the general parser gives, naming the file and the
shard, and an index the scanner accepts reads as its entries say."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from big_index import shard_samples, write_big_index

from streamx.exceptions import CorruptIndexError, IndexJSONError
from streamx.format.index import parse_index

COUNT = 2_000
LAST = COUNT - 1
_LAST_SAMPLES = f'"samples": {shard_samples(LAST)},'


def _big(tmp_path: Path, change: Callable[[str], str]) -> str:
    """The path of a ``COUNT``-shard index whose text went through ``change``."""
    path = Path(write_big_index(str(tmp_path), COUNT))
    text = path.read_text()
    path.write_text(change(text))
    return str(path)


def _in_last(old: str, new: str) -> Callable[[str], str]:
    """Replaces the last ``old`` of the index (in its last entry) with ``new``."""

    def change(text: str) -> str:
        at = text.rindex(old)
        return text[:at] + new + text[at + len(old) :]

    return change


def test_a_valid_index_reads_as_written(tmp_path: Path) -> None:
    path = _big(tmp_path, lambda text: text)
    shards = parse_index(str(tmp_path), None, path)
    entries = json.loads(Path(path).read_text())["shards"]
    assert shards.samples.tolist() == [e["samples"] for e in entries]
    last = shards[LAST]
    assert last.raw_data.basename == entries[LAST]["raw_data"]["basename"]
    assert last.zip_data is not None
    assert last.zip_data.bytes == entries[LAST]["zip_data"]["bytes"]
    assert last.column_sizes == [None, 8]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_in_last(_LAST_SAMPLES, '"samples": "9",'), "Invalid sample count '9'"),
        (_in_last(_LAST_SAMPLES, f'"samples": {2**70},'), "Invalid sample count"),
        (_in_last(_LAST_SAMPLES, '"samples": -1,'), "Invalid sample count -1"),
        (_in_last(_LAST_SAMPLES, ""), "KeyError('samples')"),
        # A repeated key: the last value counts, as when Python read the index.
        (_in_last(_LAST_SAMPLES, f"{_LAST_SAMPLES} {_LAST_SAMPLES[:-1]}000,"), "cannot fit"),
        (_in_last('"format": "mds"', '"format": 7'), "Unknown shard format 7"),
        (_in_last('"column_sizes": [null, 8]', '"column_sizes": [8]'), "differ in length"),
        (_in_last('"basename": "shard.', '"basename": "../shard.'), "escapes the dataset"),
        (_in_last('"size_limit": 67108864', f'"size_limit": {2**63}'), "Invalid size_limit"),
    ],
)
def test_a_bad_last_entry_is_named(
    tmp_path: Path, change: Callable[[str], str], message: str
) -> None:
    path = _big(tmp_path, change)
    with pytest.raises(CorruptIndexError, match=re.escape(message)) as info:
        parse_index(str(tmp_path), None, path)
    assert f"{path}, shard {LAST}" in str(info.value)


def test_a_truncated_index_is_a_json_error(tmp_path: Path) -> None:
    path = _big(tmp_path, lambda text: text[: text.rindex('"samples"')])
    with pytest.raises(IndexJSONError) as info:
        parse_index(str(tmp_path), None, path)
    assert isinstance(info.value, json.JSONDecodeError)
    assert path in str(info.value)


def test_bytes_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    path = Path(_big(tmp_path, lambda text: text))
    data = bytearray(path.read_bytes())
    data[data.rindex(b"shard.") + 2] = 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(UnicodeDecodeError) as info:  # mosaicml-streaming's type, kept
        parse_index(str(tmp_path), None, str(path))
    assert isinstance(info.value, CorruptIndexError)
    assert f"Index file at {path} is empty or corrupted: not UTF-8 text" in str(info.value)
