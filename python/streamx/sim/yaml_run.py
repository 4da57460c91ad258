"""Read a Composer / LLM Foundry training YAML, in the shapes mosaic's simulator accepts.

The dataset settings come from ``train_loader.dataset`` (or ``dataset.train_dataset`` /
``train_dataset`` with ``streaming_kwargs``), the batch from ``global_train_batch_size``,
the duration from ``max_duration`` (``"2ep"``, ``"1000ba"``) and the GPUs from
``compute.gpus``. A ``parameters:`` wrapper (MosaicML platform YAMLs) is unwrapped. A
top-level ``simulator:`` mapping (which training ignores) gives the request model's
settings (:mod:`~streamx.sim.link_fields`): ``connections``, ``part_size``,
``connection_bandwidth``, ``rtt``, ``tls_handshake``, ``throttled``, ``retry_after``,
``request_rate``, ``request_burst``, ``decompression``, ``price_per_1000`` and
``shards_ahead``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from streamx.location import INDEX_BASENAME
from streamx.sim.config import SimStream
from streamx.sim.link_fields import parse_link
from streamx.sim.shard_table import load_shards
from streamx.sim.units import parse_count, parse_float, parse_int, parse_size

__all__ = ["RunYaml", "read_run_yaml", "stream_from_spec"]

# Dataset keys that map one-to-one onto SimConfig fields.
_PASSTHROUGH = (
    "shuffle",
    "shuffle_algo",
    "shuffle_seed",
    "shuffle_block_size",
    "num_canonical_nodes",
    "partition_algo",
    "batching_method",
    "sampling_method",
    "sampling_granularity",
    "predownload",
)


@dataclass
class RunYaml:
    """What a training YAML says about the run.

    Attributes:
        path: The file read.
        total_devices: ``compute.gpus``, if given.
        workers: DataLoader workers (1 when not given, as mosaic assumes).
        global_batch_size: Samples per global step.
        epochs: Epochs, when ``max_duration`` is in epochs.
        max_batches: Batches, when ``max_duration`` is in batches.
        dataset: The train dataset's keyword arguments.
        settings: SimConfig fields found in the dataset arguments.
    """

    path: str
    total_devices: int | None
    workers: int
    global_batch_size: int
    epochs: int = 1
    max_batches: int | None = None
    dataset: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def streams(self) -> tuple[SimStream, ...]:
        """Each stream's shards, read from its ``index.json`` (local copy first, else remote).

        Raises:
            ValueError: If the dataset names no ``remote`` or ``local``.
            FileNotFoundError: If no index is found.
        """
        data = self.dataset
        specs: list[dict[str, Any]]
        if isinstance(data.get("streams"), dict):
            specs = [dict(s) for s in data["streams"].values()]
        elif isinstance(data.get("remote"), list) or isinstance(data.get("local"), list):
            remotes = data.get("remote") or [None] * len(data["local"])
            locals_ = data.get("local") or [None] * len(remotes)
            specs = [{"remote": r, "local": loc} for r, loc in zip(remotes, locals_)]
        else:
            specs = [{"remote": data.get("remote"), "local": data.get("local")}]
        for spec in specs:
            spec.setdefault("split", data.get("split"))
        return tuple(stream_from_spec(spec, self.path) for spec in specs)


def stream_from_spec(spec: dict[str, Any], where: str) -> SimStream:
    """A stream's shard table and weights from its YAML entry."""
    local, remote, split = spec.get("local"), spec.get("remote"), spec.get("split")
    if local and os.path.exists(os.path.join(local, split or "", INDEX_BASENAME)):
        table = load_shards(local, split)
    elif remote:
        table = load_shards(remote, split)
    else:
        raise ValueError(f"{where}: a stream needs a `remote` or a `local` with an index.json")
    weights: dict[str, Any] = {}
    for key in ("proportion", "repeat"):
        if spec.get(key) is not None:
            weights[key] = parse_float(f"{where}: {key}", spec[key])
    if spec.get("choose") is not None:
        weights["choose"] = parse_count(f"{where}: choose", spec["choose"])
    return SimStream(table, **weights)


def _unwrap(config: dict[str, Any], path: str) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """(train dataset kwargs, workers, the config level holding them)."""
    if "train_loader" in config:
        loader = config["train_loader"]
        if "dataset" not in loader:
            raise ValueError(f"{path}: `train_loader` has no `dataset`")
        workers = parse_int(f"{path}: num_workers", loader.get("num_workers", 1))
        return dict(loader["dataset"]), workers, config
    node = config.get("dataset", {}).get("train_dataset") or config.get("train_dataset")
    if not isinstance(node, dict):
        raise ValueError(f"{path}: no `train_loader.dataset` or `train_dataset` found")
    dataset = {**node, **node.get("streaming_kwargs", {})}
    workers = parse_int(
        f"{path}: num_workers", node.get("dataloader_kwargs", {}).get("num_workers", 1)
    )
    return dataset, workers, config


def _duration(value: Any, path: str) -> tuple[int, int | None]:
    """(epochs, max batches) from ``max_duration``: an int (epochs), ``"Nep"`` or ``"Nba"``."""
    text = str(value).strip().lower()
    if text.isdigit():
        return int(text), None
    if text.endswith("ep") and text[:-2].isdigit():
        return int(text[:-2]), None
    if text.endswith("ba") and text[:-2].isdigit():
        return 1, int(text[:-2])
    raise ValueError(f"{path}: max_duration {value!r} must be in epochs ('2ep') or batches")


def read_run_yaml(path: str) -> RunYaml:
    """Reads a training YAML.

    Args:
        path: The YAML file.

    Raises:
        FileNotFoundError: If it does not exist.
        ValueError: If it lacks the batch size, duration or train dataset.

    Examples:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.yaml"
        >>> _ = p.write_text(
        ...     "global_train_batch_size: 256\\nmax_duration: 2ep\\n"
        ...     "train_loader: {num_workers: 4, dataset: {remote: s3://b/d, shuffle: true}}\\n")
        >>> run = read_run_yaml(str(p))
        >>> run.global_batch_size, run.workers, run.epochs, run.settings
        (256, 4, 2, {'shuffle': True})
    """
    import yaml  # the [simulator] extra; only a YAML run needs it

    with open(path, encoding="utf-8") as file:
        config = yaml.safe_load(file)
    if not isinstance(config, dict):
        raise ValueError(f"{path}: a training YAML must be a mapping")
    gpus = config.get("compute", {}).get("gpus")
    top, config = config, config.get("parameters", config)
    dataset, workers, _ = _unwrap(config, path)
    batch = config.get("global_train_batch_size", config.get("batch_size"))
    if batch is None:
        batch = config.get("dataset", {}).get("train_batch_size")
    if batch is None:
        raise ValueError(f"{path}: no `global_train_batch_size` found")
    duration = config.get("max_duration", config.get("trainer", {}).get("max_duration"))
    if duration is None:
        raise ValueError(f"{path}: no `max_duration` found")
    epochs, batches = _duration(duration, path)
    # A dataset without `shuffle:` is read in order, as StreamingDataset and mosaic read it.
    settings = {k: dataset[k] for k in _PASSTHROUGH if k in dataset}
    if dataset.get("cache_limit") is not None:
        settings["cache_limit"] = parse_size(
            f"{path}: cache_limit", dataset["cache_limit"], minimum=0
        )
    link = config.get("simulator", top.get("simulator"))
    if link is not None:
        if not isinstance(link, dict):
            raise ValueError(f"{path}: `simulator` must be a mapping")
        settings.update(parse_link(link, f"{path}: simulator"))
    if dataset.get("epoch_size") is not None:
        settings["epoch_size"] = parse_count(f"{path}: epoch_size", dataset["epoch_size"])
    return RunYaml(
        path,
        parse_int(f"{path}: compute.gpus", gpus) if gpus else None,
        workers,
        parse_int(f"{path}: global_train_batch_size", batch),
        epochs,
        batches,
        dataset,
        settings,
    )
