"""``streamx merge-index``: one ``index.json`` over partitions written in parallel."""

from __future__ import annotations

import shutil
import tempfile
from typing import Annotated

import typer

from streamx.cli.errors import one_line_errors
from streamx.cli.location import Location
from streamx.cli.output import console, print_json
from streamx.location import INDEX_BASENAME
from streamx.storage.merge_index import merge_index

__all__ = ["merge_index_cmd"]


@one_line_errors
def merge_index_cmd(
    out: str = typer.Argument(
        ..., metavar="OUT", help="Dataset root (local or URL) to write index.json in."
    ),
    indexes: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[INDEX]...",
            help="Partition index.json files or their directories (default: every "
            "index.json below OUT).",
        ),
    ] = None,
    keep_local: bool = typer.Option(
        True,
        "--keep-local/--no-keep-local",
        help="Keep the local copy of a merged index uploaded to a remote OUT.",
    ),
    timeout: float = typer.Option(
        60.0, "--timeout", min=0.001, help="Seconds each index download may take."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Merge the index.json files of partitions into OUT/index.json."""
    if indexes:
        files = [
            i if i.rstrip("/").endswith(INDEX_BASENAME) else f"{i.rstrip('/')}/{INDEX_BASENAME}"
            for i in indexes
        ]
        merge_index(files, out, keep_local=keep_local, download_timeout=timeout)
    else:
        merge_index(out, keep_local=keep_local, download_timeout=timeout)
    scratch = tempfile.mkdtemp(prefix="streamx-merge-")
    try:
        split = Location(out, scratch).load_split("")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = {
        "index": f"{out.rstrip('/')}/{INDEX_BASENAME}",
        "shards": len(split.shards),
        "samples": sum(s.samples for s in split.shards),
    }
    if as_json:
        print_json(summary)
    else:
        console.print(
            f"wrote {summary['index']}: {summary['shards']} shards, {summary['samples']:,} samples"
        )
