"""The dataset hands ``streamx.torch`` one frozen value per pass (issue 22): the loader's
in-process walk and a worker's ``iter`` claim the pass the same way, and ``streamx.torch``
reads nothing private of the dataset."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import streamx
from streamx.dataset.pass_view import PassView

TORCH_PACKAGE = Path(streamx.__file__).parent / "torch"


def _private_reads_of_the_dataset(source: str) -> list[str]:
    """``<something naming a dataset>._name`` expressions (dunders aside)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and "dataset" in ast.unparse(node.value)
        ):
            found.append(ast.unparse(node))
    return found


def test_torch_reads_nothing_private_of_the_dataset() -> None:
    files = sorted(TORCH_PACKAGE.glob("*.py"))
    assert files
    reads = {f.name: _private_reads_of_the_dataset(f.read_text()) for f in files}
    assert {name: r for name, r in reads.items() if r} == {}


def test_the_check_finds_a_private_read() -> None:
    assert _private_reads_of_the_dataset("x = dataset._reader.evict") == ["dataset._reader"]


def test_a_claimed_pass_is_frozen_and_moves_the_epoch(tmp_path: Path) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"x": "int"}) as writer:
        for i in range(10):
            writer.write({"x": i})
    ds = streamx.StreamingDataset(local=str(tmp_path), batch_size=2)
    first = ds.claim_pass()
    assert isinstance(first, PassView)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.start = first.start  # type: ignore[misc]
    second = ds.claim_pass()
    assert second.start.epoch == first.start.epoch + 1
    assert ds.decodes_without_python
    # iter claims the next pass the same way, and reads every sample of it.
    assert sorted(s["x"] for s in ds) == list(range(10))
    assert ds.next_epoch == second.start.epoch + 2


def test_a_column_decoded_in_python_is_not_read_inline(tmp_path: Path) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"x": "json"}) as writer:
        writer.write({"x": {"a": 1}})
    assert not streamx.StreamingDataset(local=str(tmp_path), batch_size=1).decodes_without_python
