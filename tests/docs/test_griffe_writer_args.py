"""The API reference's griffe extension fills the writers' shared argument docs exactly as
the classes' ``__doc__`` has them at run time (one helper serves both)."""

from __future__ import annotations

import inspect
from pathlib import Path

import griffe
import pytest

import streamx
from streamx.format.writers.base import WRITER_ARGS_MARKER, fill_writer_args

ROOT = Path(__file__).resolve().parents[2]
WRITERS = [streamx.MDSWriter, streamx.JSONWriter, streamx.CSVWriter, streamx.XSVWriter]


@pytest.fixture(scope="module")
def reference() -> griffe.Module:
    extensions = griffe.load_extensions(
        f"{ROOT / 'docs' / 'griffe_writer_args.py'}:WriterArguments"
    )
    module = griffe.load(
        "streamx.format.writers", search_paths=[str(ROOT / "python")], extensions=extensions
    )
    assert isinstance(module, griffe.Module)
    return module


@pytest.mark.parametrize("cls", WRITERS, ids=lambda c: c.__name__)
def test_reference_docstring_matches_runtime(reference: griffe.Module, cls: type) -> None:
    path = f"{cls.__module__.removeprefix('streamx.format.writers.')}.{cls.__name__}"
    docstring = reference[path].docstring
    assert docstring is not None
    assert docstring.value == inspect.cleandoc(cls.__doc__ or "")
    assert WRITER_ARGS_MARKER not in docstring.value
    assert "size_limit: Shard size limit" in docstring.value


def test_fill_keeps_the_marker_lines_indentation() -> None:
    for indent in ("", "    ", "        "):
        filled = fill_writer_args(f"Args:\n{indent}{WRITER_ARGS_MARKER}\nRest.")
        lines = filled.splitlines()
        assert lines[1].startswith(f"{indent}out: Where the dataset goes:")
        assert lines[2].startswith(f"{indent}    in a temporary directory")
        assert lines[-1] == "Rest."
    assert fill_writer_args("No marker.") == "No marker."
