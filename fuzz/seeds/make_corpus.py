"""Writes the seed corpus of every fuzz target under fuzz/corpus/<target>/ from real streamx
output: shards, an index, compressed shards of every codec, ndarray values, a ledger."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import streamx
from streamx import _core

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CODECS = ["br", "bz2", "gz", "snappy", "zstd"]


def seed(target: str, name: str, data: bytes) -> None:
    path = CORPUS / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def main() -> None:
    with tempfile.TemporaryDirectory() as out:
        columns = {"id": "int", "text": "str", "arr": "ndarray", "f": "float32"}
        with streamx.MDSWriter(out=out, columns=columns, size_limit=400) as writer:
            for i in range(6):
                arr = np.arange(i + 1, dtype=np.int16).reshape(1, -1)
                writer.write({"id": i, "text": "t" * i, "arr": arr, "f": np.float32(i)})
        shards = sorted(Path(out).glob("shard.*.mds"))
        for k, shard in enumerate(shards):
            data = shard.read_bytes()
            seed("shard", f"real{k}", bytes([0b01100011]) + data)
            for c, codec in enumerate(CODECS):
                seed("decompress", f"{codec}{k}", bytes([c + 5 * 40]) + _core.compress(codec, data))
        seed("index", "real", (Path(out) / "index.json").read_bytes())
    names = b"int,str,ndarray:int16:2,3,float32,uint8,bytes"
    seed("columns", "real", names + b"\0" + bytes(range(40)))
    for code in range(1, 12):
        body = bytes([code, (2 << 2) | 0, 2, 2]) + bytes(range(8 * 4))
        seed("ndarray", f"dyn{code}", bytes([0]) + body)
    seed("ndarray", "fixed", bytes([0b0010011]) + bytes(range(12)))
    with tempfile.TemporaryDirectory() as d:
        ledger = _core.CacheLedger(str(Path(d) / "ledger"), 4, 1 << 20)
        del ledger
        seed("ledger", "fresh", (Path(d) / "ledger").read_bytes())


if __name__ == "__main__":
    sys.exit(main())
