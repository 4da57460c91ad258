"""The root ``streamx`` command; each sub-command lives in its own module and registers here."""

from __future__ import annotations

import typer

from streamx._core import __version__
from streamx.cli.convert import convert_command

app = typer.Typer(
    name="streamx",
    help="Inspect, verify, copy and plan streamx / MDS datasets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"streamx {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """streamx: stream training data from object stores into PyTorch."""


app.command("convert")(convert_command)
