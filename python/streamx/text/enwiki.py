"""English Wikipedia (2020-01-01) prepared for BERT-style masked language modelling."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from streamx.dataset.args_doc import with_streaming_args
from streamx.dataset.streaming import StreamingDataset
from streamx.order.settings import PartitionAlgo, ShuffleAlgo

__all__ = ["StreamingEnWiki"]

# The element type of each ``bytes`` column mosaicml-streaming's converter writes.
_FIELD_DTYPES: dict[str, type[np.generic]] = {
    "input_ids": np.int32,
    "input_mask": np.int32,
    "attention_mask": np.int32,
    "segment_ids": np.int32,
    "token_type_ids": np.int32,
    "masked_lm_positions": np.int32,
    "masked_lm_ids": np.int32,
    "masked_lm_weights": np.float32,
    "next_sentence_labels": np.int32,
    "labels": np.int32,
}


@with_streaming_args()
class StreamingEnWiki(StreamingDataset):
    """English Wikipedia as written by mosaicml-streaming's converter: ``bytes`` columns
    holding little-endian ``int32`` arrays (``masked_lm_weights``: ``float32``).

    Each sample is a dict of writable numpy arrays: ``input_ids``, ``token_type_ids``
    (from ``segment_ids``), ``attention_mask`` (from ``input_mask``) and ``labels``
    (``int64``: ``masked_lm_ids`` at ``masked_lm_positions``, ``-100`` elsewhere).

    The arguments shared with :class:`~streamx.StreamingDataset` keep their meaning, with
    mosaicml-streaming's defaults for this class. All arguments are keyword-only.

    Args:
        {streaming_args}

    Raises:
        ValueError: for an invalid :class:`~streamx.StreamingDataset` argument.
        KeyError: when read, for a column this dataset does not know.

    Examples:
        >>> ds = StreamingEnWiki(local="/data/enwiki", split="val")  # doctest: +SKIP
        >>> sample = ds[0]  # doctest: +SKIP
        >>> sorted(sample)  # doctest: +SKIP
        ['attention_mask', 'input_ids', 'labels', 'token_type_ids']
    """

    def __init__(
        self,
        *,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        download_retry: int = 2,
        download_timeout: float = 60,
        validate_hash: str | None = None,
        keep_zip: bool = False,
        epoch_size: int | str | None = None,
        predownload: int | None = None,
        cache_limit: int | str | None = None,
        partition_algo: PartitionAlgo = "orig",
        num_canonical_nodes: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = False,
        shuffle_algo: ShuffleAlgo = "py1s",
        shuffle_seed: int = 9176,
        shuffle_block_size: int = 1 << 18,
    ) -> None:
        super().__init__(
            remote=remote,
            local=local,
            split=split,
            download_retry=download_retry,
            download_timeout=download_timeout,
            validate_hash=validate_hash,
            keep_zip=keep_zip,
            epoch_size=epoch_size,
            predownload=predownload,
            cache_limit=cache_limit,
            partition_algo=partition_algo,
            num_canonical_nodes=num_canonical_nodes,
            batch_size=batch_size,
            shuffle=shuffle,
            shuffle_algo=shuffle_algo,
            shuffle_seed=shuffle_seed,
            shuffle_block_size=shuffle_block_size,
        )
        self.field_dtypes = dict(_FIELD_DTYPES)

    def get_item(self, idx: int, retry: int = 7) -> dict[str, NDArray[Any]]:
        """Returns the model inputs of sample ``idx`` (see the class docstring)."""
        raw = super().get_item(idx, retry)
        fields = {key: np.frombuffer(value, self.field_dtypes[key]) for key, value in raw.items()}
        labels = np.full((len(fields["input_ids"]),), -100)
        labels[fields["masked_lm_positions"]] = fields["masked_lm_ids"]
        return {
            "input_ids": fields["input_ids"].copy(),
            "token_type_ids": fields["segment_ids"].copy(),
            "attention_mask": fields["input_mask"].copy(),
            "labels": labels,
        }
