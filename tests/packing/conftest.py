"""An MDS dataset of token documents (``tokens``: ``ndarray:int32``) with varied lengths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from packing_docs import doc_lengths, write_docs


@pytest.fixture(scope="session")
def token_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[NDArray[np.int32]]]:
    out = tmp_path_factory.mktemp("packing") / "mds"
    return out, write_docs(out, doc_lengths(600))
