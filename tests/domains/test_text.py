"""streamx.text against mosaicml-streaming's streaming.text, sample by sample.

The tokenizer is built by the ``tokenizer_dir`` fixture (conftest.py), so nothing is
downloaded; it has no padding token, which exercises the fallback both libraries apply.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from domain_data import NUM_SAMPLES, assert_same_samples, sample_for

pytestmark = pytest.mark.compat

pytest.importorskip("transformers")
import streaming.text  # noqa: E402
from transformers import BatchEncoding  # noqa: E402

import streamx.text  # noqa: E402

WRITERS = ["streamx", "mosaic"]


def _pair(cls: str, local: str, **kwargs: Any) -> tuple[Any, Any]:
    kwargs = {"num_canonical_nodes": 1, "batch_size": 2, **kwargs}
    return getattr(streamx.text, cls)(local=local, **kwargs), getattr(streaming.text, cls)(
        local=local, **kwargs
    )


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize(("cls", "layout"), [("StreamingC4", "c4"), ("StreamingPile", "pile")])
@pytest.mark.parametrize("max_seq_len", [4, 16])
def test_tokenized(
    dataset_dir: Callable[[str, str], str],
    tokenizer_dir: str,
    writer: str,
    cls: str,
    layout: str,
    max_seq_len: int,
) -> None:
    ours, theirs = _pair(
        cls,
        dataset_dir(layout, writer),
        tokenizer_name=tokenizer_dir,
        max_seq_len=max_seq_len,
        group_method="truncate",
    )
    assert ours.tokenizer.pad_token == theirs.tokenizer.pad_token == "</s>"
    assert (ours.tokenizer_name, ours.max_seq_len, ours.group_method) == (
        tokenizer_dir,
        max_seq_len,
        "truncate",
    )
    sample = ours[0]
    assert isinstance(sample, BatchEncoding)
    assert len(sample["input_ids"]) == max_seq_len
    assert_same_samples(ours, theirs)


@pytest.mark.parametrize(("cls", "layout"), [("StreamingC4", "c4"), ("StreamingPile", "pile")])
def test_bad_group_method_matches(
    dataset_dir: Callable[[str, str], str], tokenizer_dir: str, cls: str, layout: str
) -> None:
    messages = []
    for lib in (streamx.text, streaming.text):
        with pytest.raises(ValueError) as caught:
            getattr(lib, cls)(
                local=dataset_dir(layout, "streamx"),
                tokenizer_name=tokenizer_dir,
                max_seq_len=8,
                group_method="concat",
            )
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("cls", ["StreamingC4", "StreamingPile"])
def test_missing_tokenizer_arguments_match(
    dataset_dir: Callable[[str, str], str], cls: str
) -> None:
    kinds = []
    for lib in (streamx.text, streaming.text):
        with pytest.raises(TypeError) as caught:
            getattr(lib, cls)(local=dataset_dir("c4", "streamx"), max_seq_len=8)
        kinds.append(type(caught.value))
    assert kinds[0] is kinds[1]


def test_missing_tokenizer_directory_fails_as_in_mosaic(
    dataset_dir: Callable[[str, str], str], tmp_path: Path
) -> None:
    kinds = []
    for lib in (streamx.text, streaming.text):
        with pytest.raises((OSError, ValueError)) as caught:
            lib.StreamingC4(
                local=dataset_dir("c4", "streamx"),
                tokenizer_name=str(tmp_path / "no-such-tokenizer"),
                max_seq_len=8,
                group_method="truncate",
            )
        kinds.append(type(caught.value))
    assert kinds[0] is kinds[1]


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("shuffle", [False, True])
def test_enwiki(dataset_dir: Callable[[str, str], str], writer: str, shuffle: bool) -> None:
    ours, theirs = _pair("StreamingEnWiki", dataset_dir("enwiki", writer), shuffle=shuffle)
    assert_same_samples(ours, theirs)
    for i in range(NUM_SAMPLES):
        sample = ours[i]
        assert all(array.flags.writeable for array in sample.values())
        written = sample_for("enwiki", i)
        positions = np.frombuffer(written["masked_lm_positions"], np.int32)
        expected = np.full(len(sample["input_ids"]), -100)
        expected[positions] = np.frombuffer(written["masked_lm_ids"], np.int32)
        np.testing.assert_array_equal(sample["labels"], expected)


def test_enwiki_unknown_column_raises_keyerror_in_both(tmp_path: Path) -> None:
    import streaming

    import streamx

    with streamx.MDSWriter(
        out=str(tmp_path), columns={"input_ids": "bytes", "extra": "bytes"}
    ) as w:
        w.write({"input_ids": b"\0" * 8, "extra": b""})
    for lib in (streamx.text, streaming.text):
        ds = lib.StreamingEnWiki(local=str(tmp_path), num_canonical_nodes=1)
        with pytest.raises(KeyError, match="extra"):
            ds[0]
