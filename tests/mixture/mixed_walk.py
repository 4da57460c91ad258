"""One segment of a kill -9 resume walk over packed mixed documents.

    python mixed_walk.py SPEC.json

Builds a ``MixedDataset`` over real ``StreamingDataset`` sources (the MDS directories of the
spec's ``root``), packs it with ``PackedDataset`` (``shuffle=False``: the mixed order), reads
it through a ``StreamingDataLoader`` with the spec's workers, loads ``load_state`` if given,
and after each sequence commits atomically ``<ckpt>/step<t>.json``: the global step ``t``,
the sequence's tokens and the loader's state. At the end it writes ``<ckpt>/done.json``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mixture_data import mixed

from streamx import PackedDataset, StreamingDataLoader


def _commit(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def packed(root: Path, spec: dict[str, Any]) -> PackedDataset:
    """The packed mixture the walk reads."""
    return PackedDataset(
        mixed(root, spec["points"], streaming=True, **spec["mixture"]), **spec["packing"]
    )


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    data = packed(Path(spec["root"]), spec)
    workers = spec["workers"]
    loader = StreamingDataLoader(
        data,
        batch_size=None,
        num_workers=workers,
        multiprocessing_context="fork" if workers else None,
    )
    step = 0
    if spec.get("load_state"):
        record = json.loads(Path(spec["load_state"]).read_text())
        loader.load_state_dict(record["state"])
        step = record["step"]
    ckpt = Path(spec["ckpt"])
    ckpt.mkdir(parents=True, exist_ok=True)
    for seq in loader:
        step += 1
        tokens = seq["input_ids"][: int(seq["num_tokens"])].tolist()
        time.sleep(spec["step_s"])  # the step's compute
        state = loader.state_dict()
        _commit(ckpt / f"step{step:06d}.json", {"step": step, "tokens": tokens, "state": state})
    _commit(ckpt / "done.json", {"steps": step})


if __name__ == "__main__":
    main()
