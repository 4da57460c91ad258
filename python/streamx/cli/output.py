"""Shared output helpers: JSON for scripts, rich tables and progress bars for people."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

__all__ = ["byte_progress", "console", "count_progress", "human_bytes", "print_json"]

# Piped output is not cut to 80 columns: tables stay one row per line for grep and logs.
console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 200)
_stderr = Console(stderr=True)


def print_json(obj: Any) -> None:
    """Writes ``obj`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False) + "\n")


def human_bytes(n: float | None) -> str:
    """``1536`` -> ``'1.5 KiB'``; None -> ``'-'``."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def count_progress(quiet: bool) -> Progress:
    """A progress bar over items, on stderr (hidden with ``quiet``, e.g. under ``--json``)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=_stderr,
        disable=quiet or not _stderr.is_terminal,
        transient=True,
    )


def byte_progress(quiet: bool) -> Progress:
    """A progress bar in bytes, on stderr (hidden with ``quiet``)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=_stderr,
        disable=quiet or not _stderr.is_terminal,
        transient=True,
    )
