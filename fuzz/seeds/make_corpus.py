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
                packed = _core.compress(codec, data)
                # codec, then the bound (little-endian u16): exact, and one byte short
                for tag, bound in (("", len(data)), ("short", len(data) - 1)):
                    limit = bound.to_bytes(2, "little")
                    seed("decompress", f"{codec}{k}{tag}", bytes([c]) + limit + packed)
        seed("index", "real", (Path(out) / "index.json").read_bytes())
    names = b"int,str,ndarray:int16:2,3,float32,uint8,bytes"
    seed("columns", "real", names + b"\0" + bytes(range(40)))
    for code in range(1, 12):
        body = bytes([code, (2 << 2) | 0, 2, 2]) + bytes(range(8 * 4))
        seed("ndarray", f"dyn{code}", bytes([0]) + body)
    seed("ndarray", "fixed", bytes([0b0010011]) + bytes(range(12)))
    for name, data in LEDGER_SEEDS.items():
        seed("ledger", name, data)


# Ledger inputs (see fuzz/fuzz_targets/ledger.rs): a config byte (shard count - 1 in bits 0-1,
# limit kind in bits 2-3, reopen when bits 4-5 are set), the limit, a corruption count and
# the corruptions, then operations (bits 0-5 % 14; bit 6 a flag; bit 7 the actor) and arguments.
PIN, UNPIN, BEGIN, TRY_BEGIN, FINISH, ABORT, SYNC, EVICT, COLDEST = range(9)
TOUCH, SET_EVICTABLE, RECOVER, CRASH, SNAPSHOT = range(9, 14)
B, FLAG = 0x80, 0x40  # the second actor; set_evictable(True)
CYCLE = bytes(
    [BEGIN, 0, 20, FINISH, 0, 20, PIN, 0, BEGIN, 1, 20, FINISH, 1, 20, TOUCH, 1]
    + [BEGIN | B, 2, 20, BEGIN, 2, 5, FINISH | B, 2, 20, UNPIN, 0, COLDEST]
    + [TRY_BEGIN, 3, 40, SYNC, 1, 0, 9, EVICT, 2, PIN | B, 3, CRASH | B, RECOVER]
    + [SET_EVICTABLE | FLAG, 0, 2, SYNC | B, 2, 1, ABORT, 3, SNAPSHOT]
)
LEDGER_SEEDS = {
    "model": bytes([0x07, 40, 0]) + CYCLE,
    "unlimited": bytes([0x02, 0]) + CYCLE,
    # corrupted: shard 0 claimed local with 50 * 16 bytes, and pin slot 0 held by our pid
    "corrupt": bytes([0x07, 40, 2, 1, 6, 0, 2, 1, 11, 0, 11, 50]) + CYCLE,
    # opened anew after pin slot 0 was given to our pid and the file lost 64 bytes
    "reopen": bytes([0x37, 40, 2, 1, 13, 0, 8, 0, 0xF8]) + CYCLE,
}


if __name__ == "__main__":
    sys.exit(main())
