"""Fixtures of the domain dataset tests: each layout written once per writer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from domain_data import WORDS, write, writers

from storage_fixtures import load_storage_fixtures  # tests/, on the path

pytest.importorskip("streaming")


_fixtures = load_storage_fixtures()
logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto: no line per request
# S3 too: tests/storage's modules run `from conftest import S3`, which finds whichever
# conftest module was imported last.
S3 = _fixtures.S3  # type: ignore[attr-defined]
moto_endpoint = _fixtures.moto_endpoint  # type: ignore[attr-defined]
s3 = _fixtures.s3  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str, str], str]]:
    """``dataset_dir(layout, writer)``: a directory holding the layout's dataset as
    written by ``writer`` (``'streamx'`` or ``'mosaic'``), written on first use."""
    from streaming.base.util import clean_stale_shared_memory

    made: dict[tuple[str, str], str] = {}
    root = tmp_path_factory.mktemp("domains")

    def get(layout: str, writer: str) -> str:
        if (layout, writer) not in made:
            made[layout, writer] = write(writers()[writer], root / f"{layout}-{writer}", layout)
        return made[layout, writer]

    clean_stale_shared_memory()
    yield get
    clean_stale_shared_memory()


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Hugging Face tokenizer directory built here (a word-level ``tokenizers.Tokenizer``),
    so nothing is downloaded: an end-of-sequence token and no padding token."""
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {word: i for i, word in enumerate(("[UNK]", "</s>", *WORDS))}
    model = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    model.pre_tokenizer = pre_tokenizers.Whitespace()
    wrapped = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=model, unk_token="[UNK]", eos_token="</s>"
    )
    out = tmp_path_factory.mktemp("tokenizer")
    wrapped.save_pretrained(str(out))
    return str(out)
