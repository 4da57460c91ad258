"""One-line failures: every command reports an error as ``error: <reason>`` and exits non-zero."""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

__all__ = ["DIST_NAME", "CommandFailed", "missing_extra", "one_line_errors", "require_extra"]

# The name to pip install ("streamx" on PyPI is an unrelated project).
DIST_NAME = "streamx-data"

P = ParamSpec("P")
R = TypeVar("R")


class CommandFailed(Exception):
    """A command's own failure, already phrased for the user; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def missing_extra(module: str, extra: str, what: str) -> str | None:
    """Why ``what`` cannot run when ``module`` is not installed (naming the extra), else None."""
    if importlib.util.find_spec(module) is not None:
        return None
    return f'{what} needs {module}, which is not installed: pip install "{DIST_NAME}[{extra}]"'


def require_extra(module: str, extra: str, what: str) -> None:
    """Raises :class:`CommandFailed` naming the extra when ``module`` is not installed."""
    problem = missing_extra(module, extra, what)
    if problem is not None:
        raise CommandFailed(problem)


def _reason(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, CommandFailed):
        return text
    return f"{type(err).__name__}: {text}"


def one_line_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turns any exception a command raises into ``error: <reason>`` on stderr and exit 1
    (2 for a keyboard interrupt), with no traceback; ``STREAMX_DEBUG=1`` re-raises."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        logging.getLogger("streamx").setLevel(logging.ERROR)
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.BadParameter):
            raise  # typer reports a bad option value itself, as a usage error
        except KeyboardInterrupt:
            print("error: interrupted", file=sys.stderr)
            raise typer.Exit(2) from None
        except Exception as err:
            if _debug():
                raise
            print(f"error: {_reason(err)}", file=sys.stderr)
            raise typer.Exit(err.code if isinstance(err, CommandFailed) else 1) from None

    return wrapper


def _debug() -> bool:
    return os.environ.get("STREAMX_DEBUG", "") not in ("", "0")
