"""A griffe extension for the API reference: fills the writers' shared argument docs.

The writers' docstrings say ``<writer arguments>`` where the arguments they share go, and
``streamx.format.writers.base.document_writer_args`` fills them in at import time; griffe
reads the source, so this runs the same helper, ``fill_writer_args``, on what griffe read.
"""

from __future__ import annotations

from typing import Any

import griffe

from streamx.format.writers.base import fill_writer_args


class WriterArguments(griffe.Extension):
    """Replaces the marker in class docstrings with the shared argument docs."""

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        if cls.docstring is not None:
            cls.docstring.value = fill_writer_args(cls.docstring.value)
