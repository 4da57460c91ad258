"""Entry point of the ``streamx`` console script and of ``python -m streamx``."""

from __future__ import annotations

from streamx.cli.app import app

__all__ = ["main"]


def main() -> None:
    """Runs the ``streamx`` command line."""
    app()
