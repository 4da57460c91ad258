"""``streamx cache usage|ls|evict|clean DIR``: the node's shard cache ledgers.

Reading (``usage``, ``ls``) takes no lock and changes nothing, so it shows what dead
processes left behind. Changes go through the ledger's own locked operations, the ones
running jobs use, so they are safe while jobs run: ``evict`` never takes a shard pinned by a
live process (unless ``--force``) and never deletes the files of a stream without a remote
(the ledger marks those unevictable), and ``clean`` only undoes the work of dead processes.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Annotated, Any

import typer
from rich.table import Table

from streamx.cli.cache_ledgers import LedgerView, dead_temp_files, find_ledgers
from streamx.cli.errors import CommandFailed, one_line_errors
from streamx.cli.output import console, human_bytes, print_json
from streamx.storage.staging import collect_dead_staging

__all__ = ["cache_app"]

cache_app = typer.Typer(
    name="cache",
    help="Show and manage the shard cache ledgers under a cache directory.",
    no_args_is_help=True,
)

_DIR = typer.Argument(..., metavar="DIR", help="Cache directory (a dataset's `local`).")
_JSON = typer.Option(False, "--json", help="Print JSON.")


def _summary(view: LedgerView) -> dict[str, Any]:
    shards = view.snapshot["shards"]
    pins = view.snapshot["pins"]
    return {
        "ledger": view.path,
        "directory": view.home,
        "shards": view.num_shards,
        "named": view.files is not None,
        "limit": view.snapshot["limit"],
        "usage": view.snapshot["usage"],
        "local": sum(s["state"] == "local" for s in shards),
        "preparing": sum(s["state"] == "preparing" for s in shards),
        "unevictable": sum(not s["evictable"] for s in shards),
        "pinned": len({p["shard"] for p in pins if p["alive"]}),
        "live_pids": sorted(
            {p["pid"] for p in pins if p["alive"]}
            | {s["owner_pid"] for s in shards if s["owner_alive"]}
        ),
        "stale_pins": sum(not p["alive"] for p in pins),
        "stale_downloads": sum(s["state"] == "preparing" and not s["owner_alive"] for s in shards),
    }


def _rows(view: LedgerView, everything: bool) -> list[dict[str, Any]]:
    holders: dict[int, list[dict[str, Any]]] = {}
    for pin in view.snapshot["pins"]:
        holders.setdefault(pin["shard"], []).append(
            {"pid": pin["pid"], "alive": pin["alive"], "count": pin["count"]}
        )
    now = time.time_ns()
    rows = []
    for i, s in enumerate(view.snapshot["shards"]):
        if not everything and s["state"] == "remote" and i not in holders:
            continue
        rows.append(
            {
                "shard": i,
                "name": view.name(i),
                "state": s["state"],
                "bytes": s["bytes"],
                "evictable": s["evictable"],
                "pinned_by": holders.get(i, []),
                "owner_pid": s["owner_pid"],
                "owner_alive": s["owner_alive"],
                "idle_s": None
                if not s["last_access_ns"]
                else round((now - s["last_access_ns"]) / 1e9, 1),
            }
        )
    return rows


def _views(directory: str) -> list[LedgerView]:
    views = find_ledgers(directory)
    if not views:
        raise CommandFailed(f"no cache ledger under {directory} (no dataset has streamed into it)")
    return views


@cache_app.command()
@one_line_errors
def usage(directory: str = _DIR, as_json: bool = _JSON) -> None:
    """Bytes held against each ledger's limit, pinned shards and live or dead processes."""
    summaries = [_summary(v) for v in _views(directory)]
    if as_json:
        print_json(summaries)
        return
    table = Table(
        "directory",
        "used",
        "limit",
        "local/shards",
        "preparing",
        "pinned",
        "live pids",
        "stale pins",
        "stale downloads",
    )
    for s in summaries:
        table.add_row(
            s["directory"],
            human_bytes(s["usage"]),
            human_bytes(s["limit"]),
            f"{s['local']}/{s['shards']}",
            str(s["preparing"]),
            str(s["pinned"]),
            " ".join(map(str, s["live_pids"])) or "-",
            str(s["stale_pins"]),
            str(s["stale_downloads"]),
        )
    console.print(table)


@cache_app.command(name="ls")
@one_line_errors
def ls(
    directory: str = _DIR,
    everything: bool = typer.Option(False, "--all", "-a", help="List remote (absent) shards too."),
    as_json: bool = _JSON,
) -> None:
    """Shards in the cache: state, size, pins (by pid, live or dead) and idle time."""
    views = _views(directory)
    listing: list[dict[str, Any]] = [
        {"ledger": v.path, "directory": v.home, "shards": _rows(v, everything)} for v in views
    ]
    if as_json:
        print_json(listing)
        return
    for entry in listing:
        table = Table("id", "shard", "state", "size", "pinned by", "idle", title=entry["directory"])
        for r in entry["shards"]:
            pins = " ".join(f"{p['pid']}{'' if p['alive'] else ' (dead)'}" for p in r["pinned_by"])
            if r["owner_pid"]:
                pins += f" fetching: {r['owner_pid']}{'' if r['owner_alive'] else ' (dead)'}"
            state = r["state"] + ("" if r["evictable"] else ", local-only")
            idle = "-" if r["idle_s"] is None else f"{r['idle_s']:.0f}s"
            table.add_row(
                str(r["shard"]),
                r["name"],
                state,
                human_bytes(r["bytes"]),
                pins.strip() or "-",
                idle,
            )
        console.print(table)


def _evict_named(view: LedgerView, shards: list[int], force: bool) -> list[tuple[int, int]]:
    snap = view.snapshot["shards"]
    for shard in shards:
        if not 0 <= shard < view.num_shards:
            raise CommandFailed(
                f"shard {shard} out of range: {view.path} has {view.num_shards} shards"
            )
        if not snap[shard]["evictable"]:
            raise CommandFailed(
                f"shard {shard} ({view.name(shard)}) belongs to a stream without a "
                "remote: its files are the only copy and are never evicted"
            )
        live = [p["pid"] for p in view.snapshot["pins"] if p["shard"] == shard and p["alive"]]
        if live and not force:
            raise CommandFailed(
                f"shard {shard} ({view.name(shard)}) is pinned by running "
                f"process(es) {live}; pass --force to evict it anyway"
            )
    ledger = view.open()
    return [(s, freed) for s in shards if (freed := ledger.evict(s)) is not None]


def _evict_coldest(view: LedgerView, target: int | None) -> list[tuple[int, int]]:
    ledger = view.open()
    done = []
    while target is None or ledger.usage > target:
        before = ledger.usage
        victim = ledger.evict_coldest()
        if victim is None:
            break
        done.append((victim, before - ledger.usage))
    return done


@cache_app.command()
@one_line_errors
def evict(
    directory: str = _DIR,
    shard: Annotated[
        list[int] | None,
        typer.Option("--shard", "-s", help="Evict this shard id (repeatable)."),
    ] = None,
    to: int = typer.Option(
        None, "--to", min=0, help="Evict least recently used shards until usage <= this many bytes."
    ),
    everything: bool = typer.Option(
        False, "--all", help="Evict every shard no running process pins."
    ),
    force: bool = typer.Option(
        False, "--force", help="With --shard: evict even if a running process pins it."
    ),
    as_json: bool = _JSON,
) -> None:
    """Delete cached shards safely, while jobs run: least recently used first, never a
    pinned shard (unless --force with --shard), never a local-only stream's files."""
    if sum(bool(x) for x in (shard, to is not None, everything)) != 1:
        raise CommandFailed("give exactly one of --shard, --to or --all")
    views = _views(directory)
    if shard and len(views) > 1:
        raise CommandFailed(f"{directory} holds {len(views)} ledgers; give the directory of one")
    report: list[dict[str, Any]] = []
    for view in views:
        done = _evict_named(view, shard, force) if shard else _evict_coldest(view, to)
        report.append(
            {
                "ledger": view.path,
                "evicted": [{"shard": s, "name": view.name(s), "bytes": b} for s, b in done],
            }
        )
    if as_json:
        print_json(report)
        return
    for entry in report:
        freed = sum(e["bytes"] for e in entry["evicted"])
        console.print(
            f"evicted {len(entry['evicted'])} shard(s), {human_bytes(freed)} freed, "
            f"from {os.path.dirname(os.path.dirname(entry['ledger']))}"
        )


@cache_app.command()
@one_line_errors
def clean(directory: str = _DIR, as_json: bool = _JSON) -> None:
    """Undo what dead processes left: their pins, half-done downloads and temporary files,
    and the staging directories of writers to a remote that were killed."""
    staging = collect_dead_staging()
    views = find_ledgers(directory)
    if not views and not staging:
        views = _views(directory)  # the usual error: nothing to clean there
    report: list[dict[str, Any]] = []
    for view in views:
        summary = _summary(view)
        view.recover()
        temps = dead_temp_files(view)
        for path in temps:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        report.append(
            {
                "ledger": view.path,
                "stale_pins": summary["stale_pins"],
                "stale_downloads": summary["stale_downloads"],
                "temp_files": temps,
                "writer_staging": staging,
            }
        )
    if not views:
        report.append({"writer_staging": staging})
    if as_json:
        print_json(report)
        return
    if staging:
        console.print(f"removed {len(staging)} staging director(ies) of killed writers")
    for entry in (e for e in report if "ledger" in e):
        console.print(
            f"released {entry['stale_pins']} stale pin(s) and {entry['stale_downloads']} "
            f"stale download(s), removed {len(entry['temp_files'])} temporary file(s) "
            f"in {os.path.dirname(os.path.dirname(entry['ledger']))}"
        )
