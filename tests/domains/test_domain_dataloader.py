"""Domain datasets in a multi-worker DataLoader yield what mosaicml-streaming's yield (in
its spawned workers); streamx's C4 pickles, tokenizer included, into spawned workers, and the
other domain datasets run in forked ones."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from domain_data import NUM_SAMPLES, assert_same, sample_for, video_bytes

pytestmark = [pytest.mark.compat, pytest.mark.dist, pytest.mark.timeout(300)]

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
import streaming.multimodal  # noqa: E402
import streaming.text  # noqa: E402

import streamx.multimodal  # noqa: E402
import streamx.text  # noqa: E402


@pytest.fixture(autouse=True)
def _no_stale_oracle_memory() -> None:
    """mosaicml-streaming's workers can wait forever on shared memory that a killed process
    of an earlier test (tests/dist kills ranks) left under a prefix it reuses."""
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()


def _collect(ds: Any, context: str) -> list[Any]:
    loader = torch.utils.data.DataLoader(
        ds,
        batch_size=2,
        num_workers=2,
        collate_fn=list,
        multiprocessing_context=context,
        timeout=120,  # a batch that never comes fails here, not at the suite's timeout
    )
    return [sample for batch in loader for sample in batch]


def _compare(ours: Any, theirs: Any, context: str) -> None:
    our_samples = _collect(ours, context)
    # Spawned, not forked: by this point of the suite the pytest process holds threads of
    # earlier tests, and a fork taken while one holds a lock hung mosaic's workers in CI.
    their_samples = _collect(theirs, "spawn")
    assert len(our_samples) == len(their_samples) > 0
    for k, (a, b) in enumerate(zip(our_samples, their_samples)):
        assert_same(a, b, f"position {k}")


def test_c4_in_spawned_workers(dataset_dir: Callable[[str, str], str], tokenizer_dir: str) -> None:
    kwargs: dict[str, Any] = {
        "local": dataset_dir("c4", "streamx"),
        "tokenizer_name": tokenizer_dir,
        "max_seq_len": 6,
        "group_method": "truncate",
        "batch_size": 2,
        "num_canonical_nodes": 1,
    }
    ours, theirs = streamx.text.StreamingC4(**kwargs), streaming.text.StreamingC4(**kwargs)
    _compare(ours, theirs, "spawn")


def test_outside_webvid_in_forked_workers(
    dataset_dir: Callable[[str, str], str], tmp_path: Path
) -> None:
    for i in range(NUM_SAMPLES):
        path = tmp_path / "videos" / sample_for("webvid_outside", i)["content_path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(video_bytes(i))
    built = [
        lib.StreamingOutsideGIWebVid(
            local=dataset_dir("webvid_outside", "mosaic"),
            extra_local=str(tmp_path / f"cache-{lib.__name__}"),
            extra_remote=str(tmp_path / "videos"),
            batch_size=2,
            num_canonical_nodes=1,
        )
        for lib in (streamx.multimodal, streaming.multimodal)
    ]
    ours, theirs = built
    _compare(ours, theirs, "fork")
