"""``import streamx`` and writing data never import torch; the datasets still are torch's.

Each check runs in a fresh interpreter, since this test process has torch loaded already.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import streamx
import streamx.dataset
from streamx.dataset.streaming import StreamingDataset


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_and_write_without_torch(tmp_path: Path) -> None:
    out = _run(
        f"""
import sys
import streamx
import streamx.dataset
print('torch' in sys.modules)
with streamx.MDSWriter(out={str(tmp_path / "ds")!r}, columns={{"id": "int", "t": "str"}}) as w:
    for i in range(10):
        w.write({{"id": i, "t": str(i)}})
streamx.Stream(local={str(tmp_path / "ds")!r})
print('torch' in sys.modules)
"""
    )
    assert out.split() == ["False", "False"]
    assert (tmp_path / "ds" / "index.json").exists()


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("StreamingDataset", "IterableDataset"),
        ("LocalDataset", "Dataset"),
        ("StreamingDataLoader", "DataLoader"),
    ],
)
def test_torch_names_load_on_first_use(name: str, base: str) -> None:
    out = _run(
        f"""
import sys
import streamx
import streamx.dataset
import streamx.dataset
assert 'torch' not in sys.modules
cls = getattr(streamx, {name!r})
import torch.utils.data
print(issubclass(cls, getattr(torch.utils.data, {base!r})))
print(getattr(streamx.dataset, {name!r}, cls) is cls, {name!r} in dir(streamx))
"""
    )
    assert out.split() == ["True", "True", "True"]


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = streamx.Nope
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = streamx.dataset.Nope


def test_lazy_name_is_the_class_pickle_finds() -> None:
    # Spawned DataLoader workers unpickle the dataset by its defining module and name.
    assert streamx.StreamingDataset is StreamingDataset
    assert pickle.loads(pickle.dumps(streamx.StreamingDataset)) is StreamingDataset
