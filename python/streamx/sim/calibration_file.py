"""The calibration file ``streamx bench`` writes and ``streamx simulate --calibrate`` reads.

Its shape is fixed (``version`` 1); rates are per second, sizes in bytes. Example::

    {"version": 1, "source": "s3://bucket/ds",
     "download": {"per_connection_bytes_per_s": 5.2e7, "shard_bytes_per_s": 2.4e8,
                  "aggregate_bytes_per_s": 3.1e8, "connections": 32},
     "decode": {"samples_per_s": 410000.0, "bytes_per_s": 9.8e8},
     "dataloader": {"samples_per_s": 52000.0, "warm_samples_per_s": 61000.0,
                    "warm_first_batch_s": 1.4, "download_s_per_byte": 2e-9,
                    "workers": 8, "batch_size": 256}}
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from streamx.runtime.atomic_write import write_atomic

if TYPE_CHECKING:
    # typing has NotRequired from Python 3.11 on; the wheel supports 3.10, and annotations
    # are never evaluated at run time (postponed, see the __future__ import).
    from typing import NotRequired

__all__ = [
    "Calibration",
    "DataLoaderRates",
    "DecodeRates",
    "DownloadRates",
    "load_calibration",
    "save_calibration",
]


class DownloadRates(TypedDict):
    """Bandwidth from the source: one connection alone; one shard fetched alone as the
    loader fetches it (ranged parts over its connections); every connection at once.

    ``connections`` is the node's connection count the loader uses. ``shard_bytes_per_s``
    is absent from files written before it was measured.
    """

    per_connection_bytes_per_s: float
    shard_bytes_per_s: NotRequired[float]
    aggregate_bytes_per_s: float
    connections: int


class DecodeRates(TypedDict):
    """Decoding local shards in one process."""

    samples_per_s: float
    bytes_per_s: float


class DataLoaderRates(TypedDict):
    """Samples per second out of a DataLoader with ``workers`` workers and ``batch_size``:
    streaming into a fresh cache, and again from that cache (``warm_samples_per_s``), with
    the seconds from that second pass's start to its first batch (``warm_first_batch_s``:
    the loader's start-up, its workers' processes and their opening of the dataset, which
    no download holds up), and the seconds the workers together lost per byte downloaded
    beside them on another pass from that cache (``download_s_per_byte``: decryption,
    copies, a server on the same cores). These are absent from files written before they
    were measured."""

    samples_per_s: float
    warm_samples_per_s: NotRequired[float]
    warm_first_batch_s: NotRequired[float]
    download_s_per_byte: NotRequired[float]
    workers: int
    batch_size: int


class Calibration(TypedDict):
    """What ``streamx bench`` measured on this node."""

    version: Literal[1]
    source: str
    download: DownloadRates
    decode: DecodeRates
    dataloader: DataLoaderRates


# Fields a file of version 1 may lack (measured since).
_OPTIONAL = {
    "shard_bytes_per_s",
    "warm_samples_per_s",
    "warm_first_batch_s",
    "download_s_per_byte",
}
_SHAPE: dict[str, dict[str, type]] = {
    "download": {
        "per_connection_bytes_per_s": float,
        "shard_bytes_per_s": float,
        "aggregate_bytes_per_s": float,
        "connections": int,
    },
    "decode": {"samples_per_s": float, "bytes_per_s": float},
    "dataloader": {
        "samples_per_s": float,
        "warm_samples_per_s": float,
        "warm_first_batch_s": float,
        "download_s_per_byte": float,
        "workers": int,
        "batch_size": int,
    },
}


def save_calibration(path: str, calibration: Calibration) -> None:
    """Writes ``calibration`` to ``path`` as JSON, atomically."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_atomic(path, json.dumps(calibration, indent=2) + "\n")


def load_calibration(path: str) -> Calibration:
    """Reads and checks a calibration file.

    Args:
        path: A file written by ``streamx bench``.

    Returns:
        The calibration, with every field of the documented shape present and typed.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If it is not JSON or does not have the version 1 shape (the message
            names the first bad field).

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "cal.json")
        >>> cal: Calibration = {"version": 1, "source": "/data",
        ...     "download": {"per_connection_bytes_per_s": 1.0, "aggregate_bytes_per_s": 2.0,
        ...                  "connections": 2},
        ...     "decode": {"samples_per_s": 3.0, "bytes_per_s": 4.0},
        ...     "dataloader": {"samples_per_s": 5.0, "workers": 0, "batch_size": 1}}
        >>> save_calibration(path, cal)
        >>> load_calibration(path)["download"]["connections"]
        2
    """
    with open(path, encoding="utf-8") as file:
        try:
            obj: Any = json.load(file)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not JSON: {err}") from err
    if not isinstance(obj, dict) or obj.get("version") != 1:
        raise ValueError(f"{path} is not a version 1 streamx calibration file")
    if not isinstance(obj.get("source"), str):
        raise ValueError(f"{path}: `source` must be a string")
    for section, fields in _SHAPE.items():
        part = obj.get(section)
        if not isinstance(part, dict):
            raise ValueError(f"{path}: `{section}` must be an object")
        for name, kind in fields.items():
            value = part.get(name)
            if value is None and name in _OPTIONAL:
                continue
            ok = isinstance(value, (int, float)) if kind is float else type(value) is int
            if not ok or isinstance(value, bool):
                raise ValueError(f"{path}: `{section}.{name}` must be a {kind.__name__}")
            part[name] = kind(value)
    return cast("Calibration", obj)
