"""``streamx convert``: files or a dataset to MDS, in parallel, resumably."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer

from streamx.cli.errors import CommandFailed, one_line_errors, require_extra
from streamx.cli.output import print_json

__all__ = ["convert_command"]

_FORMATS = ["auto", "parquet", "arrow", "jsonl", "csv", "images", "webdataset", "litdata", "hf"]


def _columns(specs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, encoding = spec.partition("=")
        if not sep or not name or not encoding:
            raise typer.BadParameter(f"{spec!r}: expected NAME=ENCODING, e.g. image=jpeg.")
        out[name] = encoding
    return out


@one_line_errors
def convert_command(
    source: str = typer.Argument(..., help="Input path or URL (files, folder, LitData, HF)."),
    out: str = typer.Argument(..., help="Output directory or remote URL (s3://...)."),
    format: str = typer.Option(
        "auto", "--format", "-f", metavar="FORMAT", help=f"One of {', '.join(_FORMATS)}."
    ),
    column: Annotated[
        list[str] | None,
        typer.Option(
            "--column",
            "-c",
            metavar="NAME=ENCODING",
            help="Encoding of a column, over the inferred one (repeatable).",
        ),
    ] = None,
    workers: int = typer.Option(
        0, "--workers", "-j", metavar="N", help="Processes; 0 = every core."
    ),
    compression: str = typer.Option(
        "", metavar="ALGO[:LEVEL]", help="Shard compression, e.g. zstd:7."
    ),
    hashes: Annotated[
        list[str] | None,
        typer.Option("--hash", metavar="ALGO", help="Shard hash algorithm (repeatable)."),
    ] = None,
    size_limit: str = typer.Option("64mb", metavar="SIZE", help="Shard size limit, e.g. 64mb."),
    rows_per_part: int = typer.Option(
        0, metavar="N", help="Rows per part for row-split inputs; 0 = auto."
    ),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="Progress bar on stderr, when it is a terminal."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Convert Parquet/Arrow/JSONL/CSV files, an image folder, WebDataset tars, a LitData or
    saved Hugging Face dataset to MDS. Rerun the same command to resume after a crash."""
    if format not in _FORMATS:
        raise typer.BadParameter(f"--format must be one of {_FORMATS}, got {format!r}.")
    overrides = _columns(column or [])
    # Imported here: pyarrow (the `streamx-data[convert]` extra) is only needed by this command.
    require_extra("pyarrow", "convert", "streamx convert")
    from streamx.convert import ConvertError, convert

    try:
        result = convert(
            source,
            out,
            format=format,  # type: ignore[arg-type]
            overrides=overrides,
            num_workers=workers or None,
            compression=compression or None,
            hashes=sorted(hashes or []) or None,
            size_limit=size_limit,
            rows_per_part=rows_per_part or None,
            progress=progress and not as_json,
        )
    except (ConvertError, TypeError, ValueError) as err:
        raise CommandFailed(str(err)) from err
    if as_json:
        print_json(asdict(result))
        return
    typer.echo(
        f"Wrote {result.samples} samples in {result.parts - result.skipped} parts "
        f"({result.skipped} already done) to {result.out}; columns {result.columns}."
    )
