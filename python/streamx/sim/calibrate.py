"""Calibrate the model with what ``streamx bench`` measured on a real node."""

from __future__ import annotations

import json
from typing import TypedDict

__all__ = ["Calibration", "read_calibration"]


class Calibration(TypedDict):
    """The measured figures the simulator uses.

    ``bandwidth`` is the node's aggregate download rate; ``min_time_per_sample`` is the
    fastest a device's DataLoader delivered a sample, a floor under the step time.
    """

    source: str
    bandwidth: float
    min_time_per_sample: float


def _number(obj: dict[str, object], section: str, key: str, path: str) -> float:
    part = obj.get(section)
    value = part.get(key) if isinstance(part, dict) else None
    if not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{path}: `{section}.{key}` must be a positive number, got {value!r}")
    return float(value)


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
        ...            "download": {"per_connection_bytes_per_s": 2e7,
        ...                         "aggregate_bytes_per_s": 1e8, "connections": 8},
        ...            "decode": {"samples_per_s": 5e4, "bytes_per_s": 1e9},
        ...            "dataloader": {"samples_per_s": 2000.0, "workers": 8,
        ...                           "batch_size": 32}}, f)
        >>> f.close()
        >>> read_calibration(f.name)["min_time_per_sample"]
        0.0005
    """
    with open(path, encoding="utf-8") as file:
        try:
            obj = json.load(file)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not JSON ({err.msg})") from err
    if not isinstance(obj, dict) or obj.get("version") != 1:
        raise ValueError(f"{path}: expected `streamx bench` JSON of version 1")
    return {
        "source": str(obj.get("source", "")),
        "bandwidth": _number(obj, "download", "aggregate_bytes_per_s", path),
        "min_time_per_sample": 1.0 / _number(obj, "dataloader", "samples_per_s", path),
    }
