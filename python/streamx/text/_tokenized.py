"""The base of text datasets whose samples are tokenized on read (C4, the Pile).

transformers is imported when such a dataset is built, not with the module, so that
``import streamx.text`` works without it (mosaicml-streaming imports it eagerly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from streamx.dataset.args_doc import PLACEHOLDER, streaming_args_doc
from streamx.dataset.streaming import StreamingDataset
from streamx.order.settings import PartitionAlgo, ShuffleAlgo

if TYPE_CHECKING:
    from transformers import BatchEncoding, PreTrainedTokenizerBase

__all__ = ["TokenizedTextDataset"]


# The arguments and errors every subclass shares, documented once: each subclass's docstring
# says what it streams and gives an example, and gets this inserted before ``Examples:``.
_SHARED_DOC = """\
    The arguments shared with :class:`~streamx.StreamingDataset` keep their meaning, with
    mosaicml-streaming's defaults for this class. All arguments are keyword-only.

    Args:
        {streaming_args}
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

""".replace(PLACEHOLDER, streaming_args_doc())


class TokenizedTextDataset(StreamingDataset):
    """Streams samples with a ``text`` column and returns them tokenized, padded and
    truncated to ``max_seq_len`` tokens. Subclasses describe their data and give an
    example; the arguments are documented here once, and added to each subclass's docstring.
    """

    # The ValueError message for an unsupported ``group_method`` (``{group_method}`` is
    # filled in); only ``'truncate'`` is supported.
    _group_method_error: ClassVar[str]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        head, examples, rest = (cls.__doc__ or "").partition("    Examples:")
        cls.__doc__ = head + _SHARED_DOC + examples + rest

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
        tokenizer_name: str,
        max_seq_len: int,
        group_method: str,
    ) -> None:
        self._check_group_method(group_method)
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
        self.tokenizer_name = tokenizer_name
        self.max_seq_len = max_seq_len
        self.group_method = group_method
        self.tokenizer = _load_tokenizer(tokenizer_name)

    def _check_group_method(self, group_method: str) -> None:
        """Raises ``ValueError`` unless ``group_method`` is supported."""
        if group_method != "truncate":
            raise ValueError(self._group_method_error.format(group_method=group_method))

    def _tokenize(self, text_sample: dict[str, Any]) -> BatchEncoding:
        """Tokenizes the sample's ``text``, padded and truncated to ``max_seq_len``."""
        encoding: BatchEncoding = self.tokenizer(
            text_sample["text"],
            truncation=True,
            padding="max_length",
            max_length=self.max_seq_len,
        )
        return encoding

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """Returns the tokenizer's output (a ``BatchEncoding``) for sample ``idx``."""
        # 'truncate' (the one group method) needs no grouping across samples.
        return self._tokenize(super().get_item(idx, retry))


def _load_tokenizer(name: str) -> PreTrainedTokenizerBase:
    """The Hugging Face tokenizer ``name`` (a hub id or a local directory), padding with
    its end-of-sequence token when it has no padding token (GPT-2's, for one)."""
    from transformers import AutoTokenizer  # optional dependency: see the module note

    tokenizer: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(name)  # type: ignore[no-untyped-call]
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer
