"""``columns`` and ``repr`` of ``StreamingDataset`` and ``LocalDataset``."""

from __future__ import annotations

from pathlib import Path

import pytest

import streamx


def _write(out: Path, columns: dict[str, str], count: int) -> str:
    with streamx.MDSWriter(out=str(out), columns=columns, size_limit=200) as writer:
        for i in range(count):
            writer.write({name: (i if enc == "int" else str(i)) for name, enc in columns.items()})
    return str(out)


@pytest.fixture
def two_dirs(tmp_path: Path) -> tuple[str, str]:
    first = _write(tmp_path / "a", {"id": "int", "text": "str"}, 40)
    second = _write(tmp_path / "b", {"id": "int", "label": "str"}, 15)
    return first, second


def test_local_dataset_columns_and_repr(two_dirs: tuple[str, str]) -> None:
    ds = streamx.LocalDataset(two_dirs[0])
    assert ds.columns == {"id": "int", "text": "str"}
    text = repr(ds)
    assert text.startswith("LocalDataset(")
    assert f"local={two_dirs[0]!r}" in text
    assert "samples=40" in text
    assert f"shards={len(ds.shards)}" in text
    assert "columns={'id': 'int', 'text': 'str'}" in text


def test_streaming_dataset_columns_and_repr(two_dirs: tuple[str, str]) -> None:
    streams = [streamx.Stream(local=two_dirs[0]), streamx.Stream(local=two_dirs[1], repeat=2)]
    ds = streamx.StreamingDataset(streams=streams, batch_size=4, shuffle=True)
    # Every stream's columns, in order; a name two streams share appears once.
    assert ds.columns == {"id": "int", "text": "str", "label": "str"}
    text = repr(ds)
    assert text.startswith("StreamingDataset(")
    for part in (
        f"streams={list(two_dirs)}",
        "samples=55",
        f"shards={ds.num_shards}",
        "epoch_size=70",
        "batch_size=4",
        "shuffle=True",
        "shuffle_algo='py1e'",
        "num_canonical_nodes=None",
    ):
        assert part in text, (part, text)
    next(iter(ds))  # an epoch fills the default canonical node count
    assert "num_canonical_nodes=1" in repr(ds)


def test_split_format_columns(tmp_path: Path) -> None:
    out = tmp_path / "json"
    with streamx.JSONWriter(out=str(out), columns={"id": "int", "name": "str"}) as writer:
        for i in range(5):
            writer.write({"id": i, "name": f"n{i}"})
    assert streamx.LocalDataset(str(out)).columns == {"id": "int", "name": "str"}
