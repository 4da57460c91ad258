"""The Pile (825 GiB of English text from 22 sources), streamed."""

from __future__ import annotations

from streamx.text._tokenized import TokenizedTextDataset

__all__ = ["StreamingPile"]


class StreamingPile(TokenizedTextDataset):
    """The Pile as written by mosaicml-streaming's converter (``str`` columns ``text``
    and ``pile_set_name``); each sample is the Hugging Face tokenizer's output for its
    ``text``, padded and truncated to ``max_seq_len`` tokens.

    The arguments shared with :class:`~streamx.StreamingDataset` keep their meaning, with
    mosaicml-streaming's defaults for this class. All arguments are keyword-only.

    Args:
        remote: Remote directory or URL to stream from; ``None`` if the data is local.
        local: Local cache directory.
        split: Sub-directory of ``remote`` and ``local``.
        download_retry: Download attempts per file.
        download_timeout: Seconds allowed per download.
        validate_hash: Hash algorithm checked on download.
        keep_zip: Keep compressed shards after decompressing them.
        epoch_size: Samples per epoch.
        predownload: Samples each worker prepares ahead.
        cache_limit: Byte limit of the shard cache.
        partition_algo: ``'orig'`` or ``'relaxed'``.
        num_canonical_nodes: Canonical node count of the sample order.
        batch_size: Per-device batch size of the DataLoader.
        shuffle: Shuffle the samples.
        shuffle_algo: Shuffle algorithm.
        shuffle_seed: Seed of the shuffle.
        shuffle_block_size: Block size of the block-based shuffles.
        tokenizer_name: Hugging Face tokenizer: a hub id or a local directory, loaded with
            ``transformers.AutoTokenizer`` (transformers must be installed).
        max_seq_len: Tokens per sample.
        group_method: How text becomes token samples; only ``'truncate'``.

    Raises:
        ValueError: for a ``group_method`` other than ``'truncate'`` (checked first) or an
            invalid :class:`~streamx.StreamingDataset` argument.
        ImportError: if transformers is not installed.
        OSError: if the tokenizer cannot be found or loaded (transformers raises a
            ``ValueError`` subclass for a name that is neither a directory nor a hub id).

    Examples:
        >>> ds = StreamingPile(local="/data/pile", split="train", tokenizer_name="gpt2",
        ...                    max_seq_len=2048, group_method="truncate")  # doctest: +SKIP
        >>> sample = ds[0]  # doctest: +SKIP
    """

    def _check_group_method(self, group_method: str) -> None:
        if group_method not in ["truncate"]:
            raise ValueError('Only group_method="truncate" is supported at this time.')
