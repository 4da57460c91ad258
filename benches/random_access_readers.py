"""Each library's ``dataset[i]`` for ``bench_random_access.py``, and its samples mapped back
to the Parquet row's columns (outside the timed accesses) for the content check.

``spec["endpoint"]`` set means cold: the copy is read from the bench's nginx (plain HTTP;
``s3://`` keys for LitData and Lance, which read no plain HTTP) into an empty cache;
unset means warm: the local files (just written, so in the page cache) read where they lie.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import S3_BENCH_ENV
from random_access_copies import BUCKET, NUMBERS, add_peer_paths, copy_dir, parquet_dir

LIBS = ("streamx-parquet", "streamx-mds", "streamx-wds", "litdata", "lance", "wids")
PEERS = ("litdata", "lance", "wids")
Getter = Callable[[int], Any]


def _index(dataset: Any) -> Getter:
    """The dataset's ``dataset[i]``."""
    getter: Getter = dataset.__getitem__
    return getter


def _url(spec: dict[str, Any], fmt: str) -> str:
    """The copy's location: a local path (warm) or its URL on nginx (cold)."""
    root = Path(spec["root"])
    path = (
        parquet_dir(root, spec["name"]) if fmt == "parquet" else copy_dir(root, spec["name"], fmt)
    )
    if not spec.get("endpoint"):
        return str(path)
    return f"{spec['endpoint']}/{path.relative_to(root).as_posix()}"


def _streamx(spec: dict[str, Any]) -> Getter:
    import streamx

    lib, local = spec["lib"], spec["local"]
    if lib == "streamx-mds":
        if spec.get("endpoint"):
            ds = streamx.StreamingDataset(remote=_url(spec, "mds"), local=local, batch_size=1)
        else:
            ds = streamx.StreamingDataset(local=_url(spec, "mds"), batch_size=1)
        return ds.__getitem__
    if lib == "streamx-parquet":
        # A plain HTTP server cannot list: the four files by brace notation.
        files = "train-{00000..00003}-of-00004.parquet"
        stream: Any = streamx.ParquetStream(remote=f"{_url(spec, 'parquet')}/{files}", local=local)
    else:
        stream = streamx.WebDatasetStream(remote=f"{_url(spec, 'wds')}/index.json", local=local)
    ds = streamx.StreamingDataset(streams=[stream], batch_size=1, shuffle=False)
    return ds.__getitem__


def _litdata(spec: dict[str, Any]) -> Getter:
    import litdata

    if not spec.get("endpoint"):
        return _index(litdata.StreamingDataset(_url(spec, "litdata")))
    from litdata.streaming import downloader
    from litdata.streaming.resolver import Dir

    # bench_objstore saw its obstore path hang against nginx; its boto3 path reads fine.
    downloader._OBSTORE_AVAILABLE = False
    url = f"s3://{BUCKET}/{spec['name']}/litdata"
    ds = litdata.StreamingDataset(
        Dir(path=spec["local"], url=url), storage_options={"endpoint_url": spec["endpoint"]}
    )
    # Its per-item ranged reads (on by default for ds[i]) handed back empty items here
    # (struct.error in deserialize): whole chunks instead, as it reads when iterating.
    ds._on_demand_bytes = os.environ.get("RA_LITDATA_ON_DEMAND") == "1"  # its cache: not yet made
    return _index(ds)


def _lance(spec: dict[str, Any]) -> Getter:
    add_peer_paths()
    import lance

    if spec.get("endpoint"):
        options = {
            "endpoint": spec["endpoint"],
            "allow_http": "true",
            "aws_access_key_id": S3_BENCH_ENV["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": S3_BENCH_ENV["AWS_SECRET_ACCESS_KEY"],
            "region": S3_BENCH_ENV["AWS_DEFAULT_REGION"],
        }
        # nginx answers no listing: the version named, its manifest is read by name.
        url = f"s3://{BUCKET}/{spec['name']}/lance"
        ds = lance.dataset(url, version=1, storage_options=options)
    else:
        ds = lance.dataset(_url(spec, "lance"))
    # A sample as the other libraries hand it out: one dict of Python values.
    return lambda i: ds.take([i]).to_pylist()[0]


def _same(url: str) -> str:
    return url


def _wids(spec: dict[str, Any]) -> Getter:
    add_peer_paths()
    import wids

    # Not webdataset 1.0.2's directory: wids comes from the private 0.2.111 install.
    assert "bench-peers" in wids.__file__, wids.__file__
    index = f"{_url(spec, 'wds')}/index.json"
    if spec.get("endpoint"):
        return _index(wids.ShardListDataset(index, cache_dir=spec["local"]))
    # Local tars opened where they are (its default copies each into a cache directory).
    return _index(wids.ShardListDataset(index, localname=_same))


def preload(lib: str) -> None:
    """Imports the library, so that the open time is the dataset's own."""
    add_peer_paths()
    importlib.import_module(lib.split("-")[0])
    if lib.startswith("streamx"):
        # streamx imports torch when its first dataset is built; LitData on its own import.
        importlib.import_module("torch")
        importlib.import_module("streamx.dataset.streaming")


def open_getter(spec: dict[str, Any]) -> Getter:
    """Builds the library's dataset over its copy; returns its ``dataset[i]``."""
    if spec["lib"].startswith("streamx"):
        return _streamx(spec)
    return {"litdata": _litdata, "lance": _lance, "wids": _wids}[spec["lib"]](spec)


def _tar_fields(sample: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A tar sample's members as columns (wids keeps the leading dot of ``.id.cls``)."""
    fields = {k[len(prefix) :].split(".")[0]: v for k, v in sample.items() if not k.startswith("_")}
    numbers = fields.pop("num", None)
    if numbers is not None:
        if isinstance(numbers, bytes | str):
            numbers = json.loads(numbers)
        fields.update(numbers)
    return fields


def columns(lib: str, sample: Any) -> dict[str, Any]:
    """The sample as ``{column: Python value}``, comparable with the Parquet row."""
    if lib in ("streamx-wds", "wids"):
        sample = _tar_fields(sample, "." if lib == "wids" else "")
    out = {}
    for key, value in sample.items():
        if hasattr(value, "item"):  # numpy scalars
            value = value.item()
        elif isinstance(value, memoryview | bytearray):
            value = bytes(value)
        elif hasattr(value, "getvalue"):  # wids hands a member it does not decode as BytesIO
            value = value.getvalue()
        out[key] = value
    return out


def same_row(lib: str, sample: Any, row: dict[str, Any]) -> bool:
    """Whether ``sample`` holds exactly the row's values, column by column."""
    got = columns(lib, sample)
    wanted = {k: row[k] for k in (["id", "text", *NUMBERS] if "text" in row else row)}
    return all(got.get(k) == v and type(got.get(k)) is type(v) for k, v in wanted.items())
