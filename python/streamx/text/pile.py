"""The Pile (825 GiB of English text from 22 sources), streamed."""

from __future__ import annotations

from streamx.text._tokenized import TokenizedTextDataset

__all__ = ["StreamingPile"]


class StreamingPile(TokenizedTextDataset):
    """The Pile as written by mosaicml-streaming's converter (``str`` columns ``text``
    and ``pile_set_name``); each sample is the Hugging Face tokenizer's output for its
    ``text``, padded and truncated to ``max_seq_len`` tokens.

    Examples:
        >>> ds = StreamingPile(local="/data/pile", split="train", tokenizer_name="gpt2",
        ...                    max_seq_len=2048, group_method="truncate")  # doctest: +SKIP
        >>> sample = ds[0]  # doctest: +SKIP
    """

    # mosaicml-streaming's wording, which differs between C4 and the Pile.
    _group_method_error = 'Only group_method="truncate" is supported at this time.'
