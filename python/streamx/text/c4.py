"""C4, the Colossal Clean Crawled Corpus (a cleaned https://commoncrawl.org crawl), streamed."""

from __future__ import annotations

from streamx.text._tokenized import TokenizedTextDataset

__all__ = ["StreamingC4"]


class StreamingC4(TokenizedTextDataset):
    """C4 as written by mosaicml-streaming's converter (``str`` columns ``text``,
    ``timestamp`` and ``url``); each sample is the Hugging Face tokenizer's output for
    its ``text``, padded and truncated to ``max_seq_len`` tokens.

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
        >>> ds = StreamingC4(remote="s3://bucket/c4", local="/tmp/c4", split="val",
        ...                  tokenizer_name="gpt2", max_seq_len=512,
        ...                  group_method="truncate")  # doctest: +SKIP
        >>> len(ds[0]["input_ids"])  # doctest: +SKIP
        512
    """

    def _check_group_method(self, group_method: str) -> None:
        if group_method not in {"truncate"}:
            raise ValueError(f"group_method='{group_method}' must be one of truncate.")
