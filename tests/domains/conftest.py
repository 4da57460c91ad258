"""Fixtures of the domain dataset tests: each layout written once per writer."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from domain_data import write, writers

pytest.importorskip("streaming")


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
