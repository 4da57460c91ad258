"""The copies that ``bench_random_access.py`` reads: one Arrow table per case, written as
Parquet (``bench_in_place``'s files, the source of truth), MDS, WebDataset tars (with a wids
shard index), LitData's optimized chunks and a Lance dataset.

Every copy holds the rows in the same order, so sample ``i`` of each is row ``i`` of the
Parquet files, whose ``id`` column is ``i``. Tars hold a sample's fields as members named
by extension: ``id.cls``, ``text.txt`` and ``num.json`` (the eight numbers) for text;
``id.cls``, ``label.cls`` and ``jpeg.bin`` for images.

The peers that are not in the main venv (Lance, and ``wids`` from webdataset 0.2.111) are
looked for in ``build/bench-peers/`` (see ``requirements/bench.txt``), appended to the end
of ``sys.path``, so ``webdataset`` itself stays the 1.0.2 of the venv.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

from bench_in_place import write_repo

ROOT = Path(__file__).resolve().parents[1]
PEER_DIRS = [ROOT / "build" / "bench-peers" / name for name in ("lance", "wids")]
SHARD = 64 << 20
BUCKET = "bucket"
NUMBERS = [f"n{k}" for k in range(4)] + [f"f{k}" for k in range(4)]
MDS_COLUMNS = {
    "text": {
        "id": "int",
        "text": "str",
        **{n: "int" if n[0] == "n" else "float64" for n in NUMBERS},
    },
    "images": {"id": "int", "label": "int", "jpeg": "bytes"},
}


def add_peer_paths() -> None:
    """Puts the private peer directories at the end of ``sys.path`` (venv packages win)."""
    for folder in PEER_DIRS:
        if folder.is_dir() and str(folder) not in sys.path:
            sys.path.append(str(folder))


def parquet_dir(root: Path, name: str) -> Path:
    return root / "datasets" / "bench" / name / "data"


def copy_dir(root: Path, name: str, fmt: str) -> Path:
    """Where the ``fmt`` copy of case ``name`` lives (``bucket/NAME/FMT``, served as S3 keys)."""
    return root / BUCKET / name / fmt


@functools.cache
def read_table(folder: str) -> Any:
    """The case's rows, in id order, from its Parquet files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted(Path(folder).glob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files])


def tar_record(name: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row as WebDataset members (the key is the zero-padded id)."""
    record: dict[str, Any] = {"__key__": f"{row['id']:09d}", "id.cls": row["id"]}
    if name == "text":
        record["text.txt"] = row["text"]
        record["num.json"] = json.dumps({n: row[n] for n in NUMBERS}).encode()
    else:
        record["label.cls"] = row["label"]
        record["jpeg.bin"] = row["jpeg"]
    return record


def _write_mds(table: Any, name: str, out: Path) -> None:
    import streamx

    with streamx.MDSWriter(out=str(out), columns=MDS_COLUMNS[name], size_limit=SHARD) as writer:
        for batch in table.to_batches(4096):
            for row in batch.to_pylist():
                writer.write(row)


def _write_tars(table: Any, name: str, out: Path) -> None:
    import webdataset as wds

    from streamx.format.webdataset.write_index import write_shard_index

    out.mkdir(parents=True)
    pattern = str(out / "shard-%06d.tar")
    with wds.ShardWriter(pattern, maxsize=SHARD, maxcount=1 << 40, verbose=0) as sink:
        for batch in table.to_batches(4096):
            for row in batch.to_pylist():
                sink.write(tar_record(name, row))
    write_shard_index(str(out), str(out / "index.json"))


def lit_rows(folder: str, block: tuple[int, int]) -> Any:
    """LitData's ``optimize`` function: the rows ``[start, stop)`` of the Parquet files."""
    start, stop = block
    yield from read_table(folder).slice(start, stop - start).to_pylist()


def _write_litdata(folder: Path, rows: int, out: Path) -> None:
    import litdata

    blocks = [(s, min(s + 2048, rows)) for s in range(0, rows, 2048)]
    litdata.optimize(
        fn=functools.partial(lit_rows, str(folder)),
        inputs=blocks,
        output_dir=str(out),
        chunk_bytes=SHARD,
        num_workers=1,
        mode="overwrite",
    )


def _write_lance(table: Any, out: Path) -> None:
    add_peer_paths()
    import lance

    lance.write_dataset(table, str(out))


def write_copies(root: Path, name: str, rows: int, image_group: int) -> dict[str, int]:
    """Writes every copy of case ``name``; returns each copy's bytes."""
    write_repo(root, name, rows, image_group)
    folder = parquet_dir(root, name)
    table = read_table(str(folder))
    _write_mds(table, name, copy_dir(root, name, "mds"))
    _write_tars(table, name, copy_dir(root, name, "wds"))
    _write_litdata(folder, rows, copy_dir(root, name, "litdata"))
    _write_lance(table, copy_dir(root, name, "lance"))
    sizes = {"parquet": folder}
    sizes.update({fmt: copy_dir(root, name, fmt) for fmt in ("mds", "wds", "litdata", "lance")})
    return {
        fmt: sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        for fmt, path in sizes.items()
    }
