"""``streamx inspect``: what a dataset holds, read from its index (and, on request, samples)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from typing import Any

import numpy as np
import typer
from rich.table import Table

from streamx.cli.errors import one_line_errors
from streamx.cli.in_place import check_format, in_place_summary
from streamx.cli.location import Location, Split
from streamx.cli.output import console, human_bytes, print_json
from streamx.format.in_place import Kind, in_place_kind
from streamx.format.index import ShardInfo
from streamx.format.readers import make_reader

__all__ = ["inspect"]


def _summary(split: Split) -> dict[str, Any]:
    shards = split.shards
    with open(split.index_path, encoding="utf-8") as file:
        version = json.load(file).get("version")
    schemas = Counter(
        tuple(zip(s.column_names, s.column_encodings, s.column_sizes)) for s in shards
    )
    columns = [
        {"name": n, "encoding": e, "size": z}
        for n, e, z in (schemas.most_common(1)[0][0] if schemas else ())
    ]
    zips = [s.get_zip_size() for s in shards]
    return {
        "split": split.name,
        "format_version": version,
        "formats": sorted({s.format for s in shards}),
        "shards": len(shards),
        "samples": sum(s.samples for s in shards),
        "raw_bytes": sum(s.get_raw_size() for s in shards),
        "zip_bytes": sum(z for z in zips if z is not None)
        if any(z is not None for z in zips)
        else None,
        # Raw and compressed apart: each is what the size limit bounds, their sum is not.
        "largest_shard_raw_bytes": max((s.get_raw_size() for s in shards), default=0),
        "largest_shard_zip_bytes": max((z for z in zips if z is not None), default=None),
        "compression": sorted({s.compression or "none" for s in shards}),
        "hashes": sorted({h for s in shards for h in s.hashes}),
        "size_limit": max((s.size_limit or 0 for s in shards), default=0) or None,
        "columns": columns,
        "schemas": len(schemas),
    }


def _shorten(value: Any, width: int) -> str:
    text = repr(value)
    if isinstance(value, np.ndarray):
        text = f"ndarray {value.dtype}{list(value.shape)} {value.tolist()!r}"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def _samples(
    location: Location, shards: tuple[ShardInfo, ...], count: int, scratch: str
) -> list[dict[str, Any]]:
    needed: list[ShardInfo] = []
    total = 0
    for shard in shards:
        if total >= count:
            break
        needed.append(shard)
        total += shard.samples
    for shard in needed:
        location.fetch(shard)
    reader = make_reader([location.readable(s, scratch) for s in needed])
    return [reader.get(i) for i in range(min(count, total))]


def _print_split(info: dict[str, Any], location: Location) -> None:
    name = info["split"] or "(root)"
    console.print(
        f"[bold]{location.target}[/bold]  split {name}  format version {info['format_version']}"
    )
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim")
    table.add_column()
    zipped = info["zip_bytes"]
    rows = [
        ("shards", f"{info['shards']} ({', '.join(info['formats'])})"),
        ("samples", f"{info['samples']:,}"),
        (
            "size",
            f"{human_bytes(info['raw_bytes'])} raw"
            + (f", {human_bytes(zipped)} compressed" if zipped is not None else ""),
        ),
        (
            "largest shard",
            f"{human_bytes(info['largest_shard_raw_bytes'])} raw"
            + (
                f", {human_bytes(info['largest_shard_zip_bytes'])} compressed"
                if info["largest_shard_zip_bytes"] is not None
                else ""
            ),
        ),
        ("compression", ", ".join(info["compression"])),
        ("hashes", ", ".join(info["hashes"]) or "none"),
        ("size limit", human_bytes(info["size_limit"])),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    columns = Table("column", "encoding", "size", title=None)
    for col in info["columns"]:
        columns.add_row(
            col["name"], col["encoding"], "-" if col["size"] is None else str(col["size"])
        )
    console.print(columns)
    if info["schemas"] > 1:
        console.print(f"[yellow]{info['schemas']} different column schemas across shards[/yellow]")


def _print_samples(samples: list[dict[str, Any]]) -> None:
    width = max(shutil.get_terminal_size((100, 20)).columns, 40)
    for i, sample in enumerate(samples):
        console.print(f"[bold]sample {i}[/bold]")
        for key, value in sample.items():
            console.print(f"  {key}: {_shorten(value, width - len(key) - 4)}", soft_wrap=True)


def _inspect_in_place(target: str, kind: Kind, samples: int, as_json: bool, scratch: str) -> None:
    info = in_place_summary(target, kind, samples, scratch)
    decoded = info.pop("decoded")
    if as_json:
        info["samples_shown"] = [{k: _shorten(v, 200) for k, v in s.items()} for s in decoded]
        print_json({"target": target, "splits": [info]})
        return
    console.print(f"[bold]{target}[/bold]  read in place ({kind})")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim")
    table.add_column()
    unit = {"parquet": "row groups", "wds": "tars", "litdata": "chunks"}[kind]
    table.add_row("shards", f"{info['shards']} ({unit})")
    table.add_row("samples", f"{info['samples']:,}")
    table.add_row("size", f"{human_bytes(info['raw_bytes'])} read")
    table.add_row("largest shard", human_bytes(info["largest_shard_raw_bytes"]))
    console.print(table)
    columns = Table("column" if kind == "parquet" else "field", "type")
    for col in info["columns"]:
        columns.add_row(col["name"], col["encoding"])
    console.print(columns)
    _print_samples(decoded)


@one_line_errors
def inspect(
    target: str = typer.Argument(..., metavar="PATH|URL", help="Dataset directory or URL."),
    samples: int = typer.Option(
        0,
        "--samples",
        "-n",
        min=0,
        metavar="N",
        help="Decode and print the first N samples of each split.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    source_format: str = typer.Option(
        "auto",
        "--format",
        help="auto, mds, parquet, wds (WebDataset tars) or litdata; auto reads .parquet, .tar "
        "and wids .json sources and LitData's index.json in place, other index.json as MDS.",
    ),
) -> None:
    """Show a dataset's splits, shards, samples, columns and encodings."""
    check_format(source_format)
    scratch = tempfile.mkdtemp(prefix="streamx-inspect-")
    try:
        kind = in_place_kind(target, source_format)
        if kind is not None:
            _inspect_in_place(target, kind, samples, as_json, scratch)
            return
        location = Location(target, scratch)
        report: list[dict[str, Any]] = []
        for split in location.splits():
            info = _summary(split)
            decoded = _samples(location, split.shards, samples, scratch) if samples else []
            if as_json:
                info["samples_shown"] = [
                    {k: _shorten(v, 200) for k, v in s.items()} for s in decoded
                ]
            else:
                _print_split(info, location)
                _print_samples(decoded)
            report.append(info)
        if as_json:
            print_json({"target": target, "splits": report})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
