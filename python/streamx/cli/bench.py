"""``streamx bench``: what this node really gets from a dataset, and a calibration file.

Three measurements, each on a bounded slice of the dataset so the command ends quickly:

* download: whole-file GETs of the first shards, one at a time (one connection); then the
  loader's own way (ranged parts over the node's connection slots): one shard at a time
  (what a shard needed now gets alone), and every shard at once over ``--connections``
  connections, by default the count the loader uses (``STREAMX_DOWNLOAD_CONNECTIONS``);
* decode: every column of the first ``--samples`` samples, in this process;
* dataloader: a ``StreamingDataset`` read through a torch ``DataLoader`` with ``--workers``
  and ``--batch-size``, streaming from the source into a fresh cache, then again from that
  cache (the warm figure, which no download holds up), and from that cache once more while
  the aggregate download runs beside it (the time each downloaded byte costs the loader:
  :mod:`~streamx.cli.bench_busy`). The requests the streaming pass sent are counted by
  kind, and priced per epoch (:mod:`~streamx.cli.request_cost`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import typer

from streamx.cli.bench_busy import busy_seconds_per_byte, keep_list
from streamx.cli.calibration import (
    Calibration,
    DataLoaderRates,
    DecodeRates,
    DownloadRates,
    save_calibration,
)
from streamx.cli.errors import CommandFailed, one_line_errors, require_extra
from streamx.cli.location import Location, Split
from streamx.cli.output import console, count_progress, human_bytes, print_json
from streamx.cli.request_cost import (
    S3_GET_PER_1000,
    S3_PUT_PER_1000,
    RequestCost,
    request_cost,
    request_rows,
)
from streamx.format.index import FileInfo, ShardInfo
from streamx.format.readers import make_reader
from streamx.runtime import metrics
from streamx.storage.download import download_file
from streamx.storage.settings import download_connections
from streamx.storage.slots import LocalSlots

if TYPE_CHECKING:
    from streamx import StreamingDataset

__all__ = ["bench"]


def _fetch_all(
    location: Location,
    split: str,
    files: list[FileInfo],
    dest: str,
    threads: int,
    slots: LocalSlots | None = None,
) -> float:
    """Seconds taken to fetch ``files`` into ``dest``, ``threads`` files at once: whole-file
    GETs, or with ``slots`` as the loader fetches (ranged parts sharing the slots)."""

    def one(info: FileInfo) -> None:
        download_file(
            location.url(split, info.basename),
            os.path.join(dest, info.basename.replace("/", "_")),
            expected_size=info.bytes if slots else None,
            slots=slots,
        )

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, files))
    elapsed = time.perf_counter() - start
    shutil.rmtree(dest, ignore_errors=True)
    return max(elapsed, 1e-9)


def _files(split: Split, shards: int) -> list[FileInfo]:
    """The files of the first ``shards`` shards, as the loader downloads them."""
    return [packed or raw for s in split.shards[:shards] for raw, packed in s.file_pairs]


def _download(
    location: Location, split: Split, shards: int, connections: int, scratch: str
) -> DownloadRates:
    files = _files(split, shards)
    single = files[: max(1, len(files) // 4)]
    slots = LocalSlots(connections)
    one = _fetch_all(location, split.name, single, os.path.join(scratch, "one"), 1)
    alone = _fetch_all(location, split.name, single, os.path.join(scratch, "shard"), 1, slots)
    many = _fetch_all(
        location, split.name, files, os.path.join(scratch, "many"), connections, slots
    )
    return {
        "per_connection_bytes_per_s": sum(f.bytes for f in single) / one,
        "shard_bytes_per_s": sum(f.bytes for f in single) / alone,
        "aggregate_bytes_per_s": sum(f.bytes for f in files) / many,
        "connections": connections,
    }


def _decode(location: Location, split: Split, samples: int, scratch: str) -> DecodeRates:
    picked: list[ShardInfo] = []
    for shard in split.shards:
        if sum(s.samples for s in picked) >= samples:
            break
        location.fetch(shard)
        picked.append(shard)
    reader = make_reader([location.readable(s, scratch) for s in picked])
    count = min(samples, sum(s.samples for s in picked))
    raw = sum(s.get_raw_size() for s in picked) * count / max(sum(s.samples for s in picked), 1)
    reader.get(0)  # opens (and decompresses) the first shard outside the timing
    start = time.perf_counter()
    for i in range(count):
        reader.get(i)
    elapsed = max(time.perf_counter() - start, 1e-9)
    return {"samples_per_s": count / elapsed, "bytes_per_s": raw / elapsed}


def _dataloader(
    location: Location,
    split: str,
    samples: int,
    workers: int,
    batch_size: int,
    scratch: str,
    fetch: Callable[[], int],
) -> DataLoaderRates:
    # torch is imported here, not at the top, so every other command starts without it.
    from streamx import StreamingDataset

    # A local dataset is streamed too (as a remote), so nothing is written beside it.
    dataset = StreamingDataset(
        remote=location.target if location.remote else location.root,
        local=os.path.join(scratch, "cache"),
        split=split or None,
        batch_size=batch_size,
    )
    cold, _ = _loader_rate(dataset, samples, workers, batch_size)
    # Again from the cache it filled: what the loader does when no download holds it up
    # (the simulator's floor under the time per sample, and its start-up before the first
    # batch; it models downloads itself).
    warm, first = _loader_rate(dataset, samples, workers, batch_size)
    # And again while ``fetch`` downloads beside it: what each downloaded byte costs it.
    busy = busy_seconds_per_byte(dataset, fetch, samples, workers, batch_size)
    return {
        "samples_per_s": cold,
        "warm_samples_per_s": warm,
        "warm_first_batch_s": first,
        "download_s_per_byte": busy,
        "workers": workers,
        "batch_size": batch_size,
    }


def _loader_rate(
    dataset: StreamingDataset, samples: int, workers: int, batch_size: int
) -> tuple[float, float]:
    """(samples per second of the first ``samples`` through a torch DataLoader, seconds to
    its first batch), both timed from the start of iteration, which starts the workers."""
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, collate_fn=keep_list)
    seen, first = 0, 0.0
    start = time.perf_counter()
    for batch in loader:
        first = first or time.perf_counter() - start
        seen += len(batch)
        if seen >= samples:
            break
    return seen / max(time.perf_counter() - start, 1e-9), first


def _busy_fetch(
    location: Location, split: Split, shards: int, connections: int, scratch: str
) -> Callable[[], int]:
    """The aggregate download again (the loader's way, over ``connections``), as a call
    that returns the bytes it moved: the busy pass runs it beside the DataLoader."""
    files = _files(split, shards)

    def fetch() -> int:
        dest = os.path.join(scratch, "busy")
        _fetch_all(location, split.name, files, dest, connections, LocalSlots(connections))
        return sum(f.bytes for f in files)

    return fetch


def _print(cal: Calibration, out: str | None, cost: RequestCost) -> None:
    d, c, loader = cal["download"], cal["decode"], cal["dataloader"]
    rows = [
        ("download, 1 connection", f"{human_bytes(d['per_connection_bytes_per_s'])}/s"),
        ("download, 1 shard alone", f"{human_bytes(d.get('shard_bytes_per_s', 0))}/s"),
        (
            f"download, {d['connections']} connections",
            f"{human_bytes(d['aggregate_bytes_per_s'])}/s",
        ),
        (
            "decode",
            f"{c['samples_per_s']:,.0f} samples/s ({human_bytes(c['bytes_per_s'])}/s)",
        ),
        (
            "dataloader",
            f"{loader['samples_per_s']:,.0f} samples/s streaming, "
            f"{loader.get('warm_samples_per_s', 0):,.0f} from the cache "
            f"({loader['workers']} workers, batch size {loader['batch_size']})",
        ),
        (
            "dataloader, downloading",
            f"{loader.get('download_s_per_byte', 0) * 1e9:.2f} s lost per GB downloaded",
        ),
        *request_rows(cost),
    ]
    width = max(len(label) for label, _ in rows) + 2
    console.print(f"[bold]{cal['source']}[/bold]")
    for label, value in rows:
        console.print(f"  {label.ljust(width)}{value}")
    if out:
        console.print(f"calibration written to {out}")


@one_line_errors
def bench(
    target: str = typer.Argument(..., metavar="PATH|URL", help="Dataset directory or URL."),
    split: str = typer.Option(None, "--split", help="Split to measure (default: the first)."),
    shards: int = typer.Option(
        16, "--shards", min=1, help="Shards downloaded for the bandwidth figures."
    ),
    connections: int = typer.Option(
        None,
        "--connections",
        "-c",
        min=1,
        help="Connections for the aggregate figure (default: the loader's, "
        "STREAMX_DOWNLOAD_CONNECTIONS or 32).",
    ),
    samples: int = typer.Option(
        5000, "--samples", min=1, help="Samples decoded and read through the DataLoader."
    ),
    workers: int = typer.Option(2, "--workers", "-w", min=0, help="DataLoader workers."),
    batch_size: int = typer.Option(32, "--batch-size", "-b", min=1, help="DataLoader batch size."),
    out: str = typer.Option(
        "calibration.json", "--out", "-o", help="Calibration file to write ('' for none)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the calibration as JSON."),
    get_price: float = typer.Option(
        S3_GET_PER_1000,
        "--get-price",
        min=0,
        help="Price per 1,000 GET and HEAD requests (default: S3 Standard's, $0.0004).",
    ),
    put_price: float = typer.Option(
        S3_PUT_PER_1000,
        "--put-price",
        min=0,
        help="Price per 1,000 PUT, POST and LIST requests (default: S3 Standard's, $0.005).",
    ),
) -> None:
    """Measure download, decode and DataLoader throughput; write a calibration file.

    The file (``--out``) is what ``streamx simulate --calibrate`` takes.
    """
    require_extra("torch", "torch", "streamx bench (its DataLoader figure)")
    connections = connections or download_connections()
    os.environ["STREAMX_DOWNLOAD_CONNECTIONS"] = str(connections)
    scratch = tempfile.mkdtemp(prefix="streamx-bench-")
    try:
        location = Location(target, scratch)
        name = split if split is not None else location.split_names[0]
        if name not in location.split_names:
            raise CommandFailed(f"{target} has no split {name!r} (it has {location.split_names})")
        chosen = location.load_split(name)
        with count_progress(as_json) as progress:
            task = progress.add_task("download", total=3)
            download = _download(location, chosen, shards, connections, scratch)
            progress.update(task, advance=1, description="decode")
            decode = _decode(location, chosen, samples, scratch)
            progress.update(task, advance=1, description="dataloader")
            before = metrics.snapshot()
            fetch = _busy_fetch(location, chosen, shards, connections, scratch)
            loader = _dataloader(location, name, samples, workers, batch_size, scratch, fetch)
            epoch = sum((z or r).bytes for s in chosen.shards for r, z in s.file_pairs)
            cost = request_cost(before, metrics.snapshot(), epoch, get_price, put_price)
            progress.advance(task)
        cal: Calibration = {
            "version": 1,
            "source": target,
            "download": download,
            "decode": decode,
            "dataloader": loader,
        }
        if out:
            save_calibration(out, cal)
        if as_json:
            print_json({**cal, "requests": cost})
        else:
            _print(cal, out or None, cost)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
