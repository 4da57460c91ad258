"""A griffe extension for the API reference: fills the writers' shared argument docs.

The writers' docstrings say ``<writer arguments>`` where the arguments they share go, and
``streamx.format.writers.base.document_writer_args`` fills them in at import time; griffe reads
the source, so this does the same for the reference pages.
"""

from __future__ import annotations

import textwrap
from typing import Any

import griffe

from streamx.format.writers.base import WRITER_ARGS_DOC

_MARKER = "<writer arguments>"


class WriterArguments(griffe.Extension):
    """Replaces the marker in class docstrings with the shared argument docs."""

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        docstring = cls.docstring
        if docstring is None or _MARKER not in docstring.value:
            return
        args = textwrap.indent(textwrap.dedent(WRITER_ARGS_DOC.strip("\n")), "    ")
        docstring.value = docstring.value.replace("    " + _MARKER, args)
