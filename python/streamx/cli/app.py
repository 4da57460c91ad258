"""The root ``streamx`` command; each sub-command lives in its own module and registers here."""

from __future__ import annotations

import typer

from streamx._core import __version__
from streamx.cli import bench, cache_cmd, cp, inspect_cmd, merge_cmd, verify
from streamx.cli.convert import convert_command
from streamx.cli.simulate import simulate_command

app = typer.Typer(
    name="streamx",
    help="Inspect, verify, copy and plan streamx / MDS datasets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: rich panels would tag every flag with its Python type ("--help <bool>").
    rich_markup_mode=None,
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


app.command(name="inspect")(inspect_cmd.inspect)
app.command(name="verify")(verify.verify)
app.command(name="cp")(cp.cp)
app.command(name="merge-index")(merge_cmd.merge_index_cmd)
app.command(name="bench")(bench.bench)
app.add_typer(cache_cmd.cache_app, name="cache")
app.command("simulate")(simulate_command)
app.command("convert")(convert_command)
