"""C4, the Colossal Clean Crawled Corpus (a cleaned https://commoncrawl.org crawl), streamed."""

from __future__ import annotations

from streamx.text._tokenized import TokenizedTextDataset

__all__ = ["StreamingC4"]


class StreamingC4(TokenizedTextDataset):
    """C4 as written by mosaicml-streaming's converter (``str`` columns ``text``,
    ``timestamp`` and ``url``); each sample is the Hugging Face tokenizer's output for
    its ``text``, padded and truncated to ``max_seq_len`` tokens.

    Examples:
        >>> ds = StreamingC4(remote="s3://bucket/c4", local="/tmp/c4", split="val",
        ...                  tokenizer_name="gpt2", max_seq_len=512,
        ...                  group_method="truncate")  # doctest: +SKIP
        >>> len(ds[0]["input_ids"])  # doctest: +SKIP
        512
    """

    # mosaicml-streaming's wording, which differs between C4 and the Pile.
    _group_method_error = "group_method='{group_method}' must be one of truncate."
