"""``streamx simulate``: predict a run's throughput, downloads and cache needs.

Mirrors mosaic's ``sim_cli`` (``-n/-d/-t/-b``); values a YAML does not give are asked for
only when stdin is a terminal, otherwise the command fails naming the missing flag.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import typer

from streamx.cli.errors import missing_extra
from streamx.order.settings import PartitionAlgo, ShuffleAlgo
from streamx.sim.build import expand_compare, parse_compare, streams_from
from streamx.sim.calibrate import loader_time_per_byte, loader_time_per_sample, read_calibration
from streamx.sim.config import SimConfig
from streamx.sim.display import UNITS, summary_line
from streamx.sim.link_fields import LINK_FIELDS, parse_link
from streamx.sim.quality import shuffle_quality
from streamx.sim.requests import S3_GET_PER_1000
from streamx.sim.result import SimResult
from streamx.sim.run import epoch_order, simulate
from streamx.sim.tune import tune
from streamx.sim.ui import DEFAULT_PORT
from streamx.sim.units import parse_float, parse_size
from streamx.sim.yaml_run import read_run_yaml

__all__ = ["run_simulations", "simulate_command"]


def _need(value: Any, flag: str, prompt: str, kind: type) -> Any:
    """``value``, else asked on a terminal, else a clear error naming ``flag``."""
    if value is not None:
        return value
    if sys.stdin.isatty():
        return typer.prompt(prompt, type=kind)
    raise typer.BadParameter(f"missing {flag} (stdin is not a terminal, so nothing is asked)")


def run_simulations(
    configs: list[SimConfig], quality: bool
) -> tuple[list[SimResult], dict[str, Any]]:
    """Simulates each config; with ``quality``, measures each one's first-epoch shuffle."""
    results = [simulate(c) for c in configs]
    extra: dict[str, Any] = {}
    if quality:
        for i, c in enumerate(configs):
            ends = c.shards.samples.cumsum()
            extra[c.name or f"run {i + 1}"] = shuffle_quality(epoch_order(c, 0), ends)
    return results, extra


# A list option: a module-level default, so the default is not built per call (B008).
_COMPARE = typer.Option(None, "--compare", help="FIELD=V1,V2 (repeatable).")


def simulate_command(
    run_yaml: str | None = typer.Argument(None, metavar="[RUN.yaml]", help="Training YAML."),
    nodes: int | None = typer.Option(None, "--nodes", "-n", help="Physical nodes."),
    devices: int | None = typer.Option(None, "--devices", "-d", help="Devices per node."),
    workers: int | None = typer.Option(None, "--workers", "-w", help="Workers per device."),
    time_per_sample: float | None = typer.Option(
        None, "--time-per-sample", "-t", help="Seconds a device spends on one sample."
    ),
    bandwidth: str | None = typer.Option(
        None, "--bandwidth", "-b", help="Download rate per node and second, e.g. 100MB."
    ),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Per-device batch."),
    global_batch_size: int | None = typer.Option(None, "--global-batch-size"),
    epochs: int | None = typer.Option(None, "--epochs"),
    max_batches: int | None = typer.Option(None, "--max-batches"),
    index: str | None = typer.Option(None, "--index", help="Dataset dir or URL with index.json."),
    split: str | None = typer.Option(None, "--split"),
    samples: str | None = typer.Option(None, "--samples", help="Synthesise N samples."),
    shard_samples: int = typer.Option(4096, "--shard-samples", help="Samples per synthetic shard."),
    shard_bytes: str = typer.Option("64MB", "--shard-bytes", help="Bytes per synthetic shard."),
    predownload: int | None = typer.Option(None, "--predownload"),
    cache_limit: str | None = typer.Option(None, "--cache-limit"),
    shuffle: bool | None = typer.Option(None, "--shuffle/--no-shuffle"),
    shuffle_algo: str | None = typer.Option(None, "--shuffle-algo"),
    seed: int | None = typer.Option(None, "--seed"),
    num_canonical_nodes: int | None = typer.Option(None, "--num-canonical-nodes"),
    partition_algo: str | None = typer.Option(None, "--partition-algo"),
    compare: list[str] | None = _COMPARE,
    calibrate: str | None = typer.Option(None, "--calibrate", help="`streamx bench` JSON."),
    mosaic_rounding: bool = typer.Option(
        False, "--mosaic-rounding", help="Drop download waits to whole seconds, as mosaic does."
    ),
    connections: str | None = typer.Option(
        None, "--connections", help="HTTP connections per node (STREAMX_DOWNLOAD_CONNECTIONS)."
    ),
    part_size: str | None = typer.Option(
        None, "--part-size", help="Largest ranged GET, e.g. 8MiB (STREAMX_DOWNLOAD_PART_SIZE)."
    ),
    connection_bandwidth: str | None = typer.Option(
        None, "--connection-bandwidth", help="Rate cap of one connection, e.g. 40MB."
    ),
    rtt: str | None = typer.Option(None, "--rtt", help="Seconds before a request's first byte."),
    tls_handshake: str | None = typer.Option(
        None, "--tls-handshake", help="Seconds a new TLS connection takes."
    ),
    throttled: str | None = typer.Option(
        None, "--throttled", help="Share of requests answered 503/429, e.g. 0.1 or 10%."
    ),
    retry_after: str | None = typer.Option(
        None, "--retry-after", help="Retry-After seconds of throttled answers (default: none)."
    ),
    request_rate: str | None = typer.Option(
        None,
        "--request-rate",
        help="Requests per second the store admits per node, e.g. 40 or 40r/s "
        "(503/429 past it; the model finds the throttled share).",
    ),
    request_burst: str | None = typer.Option(
        None, "--request-burst", help="Requests the store admits past --request-rate at once."
    ),
    decompression: str | None = typer.Option(
        None, "--decompression", help="Decompression rate per process, e.g. 500MB."
    ),
    price_per_1000: str | None = typer.Option(
        None,
        "--price-per-1000",
        help=f"Dollars per 1,000 GET/HEAD requests (default {S3_GET_PER_1000}, S3 Standard).",
    ),
    shards_ahead: str | None = typer.Option(
        None, "--shards-ahead", help="Shards fetched past predownload (streamx's loader: 4)."
    ),
    tune_run: bool = typer.Option(
        False,
        "--tune",
        help="Recommend the cheapest workers, predownload, connections, "
        "part size and cache_limit that keep the run as fast as it gets.",
    ),
    tolerance: float = typer.Option(
        0.02, "--tolerance", help="With --tune: the share of the best throughput to give up."
    ),
    quality: bool = typer.Option(True, "--quality/--no-quality", help="Measure the shuffle."),
    out: str | None = typer.Option(None, "--out", help="Directory for plots and report.html."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    ui: bool = typer.Option(False, "--ui", help="Serve the web UI instead."),
    port: int | None = typer.Option(
        None, "--port", help=f"Port of the web UI (default {DEFAULT_PORT}, else a free one)."
    ),
) -> None:
    """Simulate a streaming run: step times, downloads, warm-up, cache and shuffle quality."""
    if ui:
        from streamx.sim.ui import serve  # the UI server is only needed here

        try:
            serve(port=port)
        except OSError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(1) from None
        return
    needs = [("yaml", "a run YAML")] if run_yaml else []
    needs += [("matplotlib", "--out (plots)")] if out else []
    for problem in (missing_extra(m, "simulator", f"streamx simulate {w}") for m, w in needs):
        if problem:  # checked first: nothing is simulated or written without the extra
            typer.echo(f"error: {problem}", err=True)
            raise typer.Exit(1)
    try:
        configs = _configs(locals())
        if tune_run:
            _tune(configs, tolerance, as_json)
            return
        results, extra = run_simulations(configs, quality)
    except (ValueError, FileNotFoundError, OSError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from err
    _emit(results, extra, out, as_json)


def _tune(configs: list[SimConfig], tolerance: float, as_json: bool) -> None:
    """Runs the planner on the one configuration and prints what it recommends."""
    if len(configs) > 1:
        raise ValueError("--tune searches the settings itself: leave out --compare")
    found = tune(configs[0], tolerance=parse_float("--tolerance", tolerance))
    if as_json:
        typer.echo(json.dumps({"tune": found.as_json(), "units": UNITS}, indent=2))
        return
    typer.echo(f"given:       {found.given.line()}")
    typer.echo(f"recommended: {found.recommended.line()}")
    typer.echo(
        f"(fastest seen {found.best_samples_per_s:,.1f} samples/s; the recommendation keeps "
        f"within {found.tolerance:.0%} of it; {found.simulations} settings simulated)"
    )
    for line in found.advice():
        typer.echo(f"  {line}")


def _configs(a: dict[str, Any]) -> list[SimConfig]:
    run = read_run_yaml(a["run_yaml"]) if a["run_yaml"] else None
    nodes = _need(a["nodes"], "--nodes", "Number of physical nodes", int)
    devices = a["devices"]
    if devices is None and run is not None and run.total_devices:
        if run.total_devices % nodes:
            raise ValueError(f"compute.gpus ({run.total_devices}) is not a multiple of {nodes}")
        devices = run.total_devices // nodes
    devices = _need(devices, "--devices", "Devices per node", int)
    tps = _need(a["time_per_sample"], "--time-per-sample", "Seconds per sample per device", float)
    tps = parse_float("--time-per-sample", tps)
    calib = read_calibration(a["calibrate"]) if a["calibrate"] else None
    rate = a["bandwidth"] or (str(int(calib["bandwidth"])) if calib else None)
    rate = _need(rate, "--bandwidth", "Bandwidth per node (bytes/s, e.g. 100MiB)", str)
    bandwidth = float(parse_size("--bandwidth", rate))
    workers = a["workers"] if a["workers"] is not None else (run.workers if run else 8)
    shard_rate = calib["shard_bandwidth"] if calib else None
    if calib:
        # The loader's cost stays apart from the model's time, so runs with other workers
        # (--tune's candidates, --compare workers=...) each get their own floor.
        kw_calib: dict[str, Any] = {
            "loader_time_per_sample": loader_time_per_sample(calib),
            "loader_time_per_byte": loader_time_per_byte(calib),
            "startup_time": calib["startup_time"],
            "connections": calib["connections"],
            "connection_bandwidth": calib["connection_bandwidth"],
        }
    else:
        kw_calib = {}
    batch = a["batch_size"]
    global_batch = a["global_batch_size"] or (run.global_batch_size if run else None)
    if batch is None and global_batch is not None:
        if global_batch % (nodes * devices):
            raise ValueError(
                f"global batch {global_batch} is not a multiple of the {nodes * devices} devices"
            )
        batch = global_batch // (nodes * devices)
    batch = _need(batch, "--batch-size", "Per-device batch size", int)
    kw: dict[str, Any] = dict(run.settings) if run else {}
    flags = {
        "predownload": a["predownload"],
        "shuffle": a["shuffle"],
        "shuffle_seed": a["seed"],
        "num_canonical_nodes": a["num_canonical_nodes"],
        "shuffle_algo": _literal(a["shuffle_algo"], ShuffleAlgo, "--shuffle-algo"),
        "partition_algo": _literal(a["partition_algo"], PartitionAlgo, "--partition-algo"),
        "cache_limit": parse_size("--cache-limit", a["cache_limit"], minimum=0)
        if a["cache_limit"]
        else None,
        "mosaic_rounding": a["mosaic_rounding"] or None,
    }
    kw.update({k: v for k, v in flags.items() if v is not None})
    for key in (k for k in LINK_FIELDS if a[k] is not None):
        kw.update(parse_link({key: a[key]}, "--" + key.replace("_", "-")))
    if run is not None:
        kw.setdefault("epochs", run.epochs)
        kw.setdefault("max_batches", run.max_batches)
    if a["epochs"] is not None:
        kw["epochs"] = a["epochs"]
    if a["max_batches"] is not None:
        kw["max_batches"] = a["max_batches"]
    streams = (
        run.streams()
        if run and not a["index"] and not a["samples"]
        else streams_from(
            a["index"], a["split"], a["samples"], a["shard_samples"], a["shard_bytes"]
        )
    )
    base = SimConfig(
        streams,
        nodes=nodes,
        devices=devices,
        workers=workers,
        batch_size=batch,
        time_per_sample=tps,
        bandwidth=bandwidth,
        shard_bandwidth=shard_rate,
        **{**kw_calib, **kw},  # the YAML and flags win over what the bench measured
    )
    return expand_compare(base, parse_compare(a["compare"] or []))


def _literal(value: str | None, kind: Any, flag: str) -> Any:
    from typing import get_args

    if value is not None and value not in get_args(kind):
        raise ValueError(f"{flag} {value!r} is not one of {list(get_args(kind))}")
    return value


def _emit(results: list[SimResult], extra: dict[str, Any], out: str | None, as_json: bool) -> None:
    summaries = [r.summary() for r in results]
    if out:
        from streamx.sim.report import plot_runs, write_report  # needs matplotlib

        plot_runs(results, out)
        write_report(results, os.path.join(out, "report.html"), {"shuffle_quality": extra})
        with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as file:
            json.dump({"runs": summaries, "units": UNITS, "shuffle_quality": extra}, file, indent=2)
    if as_json:
        typer.echo(
            json.dumps({"runs": summaries, "units": UNITS, "shuffle_quality": extra}, indent=2)
        )
        return
    for s in summaries:
        typer.echo(summary_line(s))
    for name, q in extra.items():
        typer.echo(
            f"{name}: shuffle entropy {q['entropy']:.2f}, mean jump "
            f"{q['mean_jump']:.3f}, order correlation {q['order_correlation']:.3f}"
        )
