"""Calibrate the model with what ``streamx bench`` measured on a real node."""

from __future__ import annotations

from typing import TypedDict

from streamx.sim.calibration_file import load_calibration

__all__ = [
    "Calibration",
    "loader_step_time",
    "loader_time_per_byte",
    "loader_time_per_sample",
    "read_calibration",
]


class Calibration(TypedDict):
    """The measured figures the simulator uses.

    ``bandwidth`` is the node's aggregate download rate over the loader's ``connections``,
    ``connection_bandwidth`` one connection's alone (the request model's cap);
    ``shard_bandwidth`` what one shard fetched alone gets (``None`` in files from before it
    was measured); ``min_time_per_sample`` is the fastest a device's DataLoader delivered a
    sample from a warm cache (downloads are the model's own part), a floor under the step
    time; ``startup_time`` the seconds that DataLoader took from a warm cache to its first
    batch (its workers' start-up: 0 in files from before it was measured), which the
    simulated first batch pays before any download; ``download_time_per_byte`` the seconds
    that DataLoader's workers together lost per byte downloaded beside them (TLS
    decryption, copies, a server on the same cores: 0 in files from before it was
    measured); ``workers`` the DataLoader workers it was measured with (the start-up grows
    with them: calibrate with the workers you simulate).
    """

    source: str
    bandwidth: float
    shard_bandwidth: float | None
    connection_bandwidth: float
    connections: int
    min_time_per_sample: float
    startup_time: float
    download_time_per_byte: float
    workers: int


def read_calibration(path: str) -> Calibration:
    """Reads the JSON ``streamx bench`` writes (version 1).

    Args:
        path: The JSON file.

    Raises:
        FileNotFoundError: If it does not exist.
        ValueError: If it is not bench output of a known version.

    Examples:
        >>> import json, tempfile
        >>> f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        >>> json.dump({"version": 1, "source": "s3://b/d",
        ...            "download": {"per_connection_bytes_per_s": 2e7, "shard_bytes_per_s": 8e7,
        ...                         "aggregate_bytes_per_s": 3e8, "connections": 32},
        ...            "decode": {"samples_per_s": 5e4, "bytes_per_s": 1e9},
        ...            "dataloader": {"samples_per_s": 2000.0, "workers": 8,
        ...                           "warm_first_batch_s": 1.5, "batch_size": 32,
        ...                           "download_s_per_byte": 1e-9}}, f)
        >>> f.close()
        >>> cal = read_calibration(f.name)
        >>> cal["shard_bandwidth"], cal["min_time_per_sample"], cal["startup_time"]
        (80000000.0, 0.0005, 1.5)
        >>> cal["download_time_per_byte"]
        1e-09
    """
    cal = load_calibration(path)
    download, loader = cal["download"], cal["dataloader"]
    return {
        "source": cal["source"],
        "bandwidth": download["aggregate_bytes_per_s"],
        "shard_bandwidth": download.get("shard_bytes_per_s"),
        "connection_bandwidth": download["per_connection_bytes_per_s"],
        "connections": download["connections"],
        "min_time_per_sample": 1.0
        / max(loader.get("warm_samples_per_s", 0.0), loader["samples_per_s"]),
        "startup_time": loader.get("warm_first_batch_s", 0.0),
        "download_time_per_byte": loader.get("download_s_per_byte", 0.0),
        "workers": loader["workers"],
    }


def loader_time_per_sample(cal: Calibration) -> float:
    """Seconds one DataLoader process takes per sample: ``min_time_per_sample`` is what the
    calibrated DataLoader's ``cal["workers"]`` processes delivered together.

    Examples:
        >>> loader_time_per_sample({"min_time_per_sample": 0.01, "workers": 2})
        0.02
    """
    return cal["min_time_per_sample"] * max(cal["workers"], 1)


def loader_time_per_byte(cal: Calibration) -> float:
    """Seconds one DataLoader process loses per byte it downloads: ``download_time_per_byte``
    is what the calibrated DataLoader's ``cal["workers"]`` processes lost together.

    Examples:
        >>> loader_time_per_byte({"download_time_per_byte": 1e-9, "workers": 4})
        4e-09
    """
    return cal["download_time_per_byte"] * max(cal["workers"], 1)


def loader_step_time(model: float, loader: float, workers: int) -> float:
    """A device's seconds per sample from the model's ``model`` seconds and one loader
    process's ``loader`` seconds, with ``workers`` DataLoader workers.

    With workers the loader runs beside the model, a floor under the step that more workers
    lower; without (0), the training process loads each sample itself before its model
    step, so the two add up.

    Examples:
        >>> loader_step_time(0.001, 0.02, 0), loader_step_time(0.001, 0.02, 4)
        (0.021, 0.005)
        >>> loader_step_time(0.03, 0.02, 4)
        0.03
    """
    if workers == 0:
        return model + loader
    return max(model, loader / workers)
