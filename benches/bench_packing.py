"""Token packing: tokens/s of streamx's PackedDataset (concat and best_fit) in a DataLoader
against LitData's TokensLoader on the same tokens, and best_fit's packing efficiency against
offline first-fit decreasing (FFD).

    .venv/bin/python benches/bench_packing.py [--docs 20000] [--seq-len 2048]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader


def _docs(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(5.5, 1.0, size=n), 1, 2048).astype(int)
    return [rng.integers(1, 50_000, size=k, dtype=np.int32) for k in lengths]


def _ffd_bins(lengths: list[int], cap: int) -> int:
    free: list[int] = []
    for n in sorted(lengths, reverse=True):
        for i, f in enumerate(free):
            if f >= n:
                free[i] -= n
                break
        else:
            free.append(cap - n)
    return len(free)


def _streamx(
    root: Path, seq_len: int, mode: str, workers: int, tracked: bool = True
) -> tuple[int, float]:
    """``tracked``: through ``StreamingDataLoader`` (exact resume, the documented way);
    else a plain torch ``DataLoader``."""
    from streamx import LocalDataset, PackedDataset, StreamingDataLoader

    packed = PackedDataset(
        LocalDataset(str(root)), seq_len=seq_len, mode=mode, buffer_size=1000, truncate=True
    )
    loader = (StreamingDataLoader if tracked else DataLoader)(
        packed,
        batch_size=None,
        num_workers=workers,
        multiprocessing_context="fork" if workers else None,
    )
    start = time.perf_counter()
    tokens = sum(int(s["num_tokens"]) for s in loader)
    return tokens, time.perf_counter() - start


def _litdata(root: Path, seq_len: int, workers: int) -> tuple[int, float]:
    import litdata

    loader = litdata.StreamingDataLoader(
        litdata.StreamingDataset(str(root), item_loader=litdata.TokensLoader(block_size=seq_len)),
        batch_size=1,
        num_workers=workers,
    )
    start = time.perf_counter()
    tokens = sum(int(b.numel()) for b in loader)
    return tokens, time.perf_counter() - start


def _lit_item(doc: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(doc.astype(np.int32))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    docs = _docs(args.docs)
    total = sum(len(d) for d in docs)
    with tempfile.TemporaryDirectory() as tmp:
        from streamx import MDSWriter

        mds = Path(tmp) / "mds"
        with MDSWriter(out=str(mds), columns={"tokens": "ndarray:int32"}) as w:
            for d in docs:
                w.write({"tokens": d})
        import litdata

        lit = Path(tmp) / "lit"
        litdata.optimize(
            fn=_lit_item,
            inputs=docs,
            output_dir=str(lit),
            chunk_bytes="64MB",
            item_loader=litdata.TokensLoader(),
            num_workers=1,
        )
        print(
            f"{args.docs} documents, {total} tokens, seq_len {args.seq_len}, "
            f"{args.workers} worker(s)"
        )
        lit_tokens, lit_s = _litdata(lit, args.seq_len, args.workers)
        print(
            f"litdata TokensLoader : {lit_tokens / lit_s / 1e6:8.2f} M tokens/s "
            f"({lit_tokens} tokens)"
        )
        for mode, tracked in (("concat", True), ("best_fit", True), ("concat", False)):
            n, s = _streamx(mds, args.seq_len, mode, args.workers, tracked)
            how = "StreamingDataLoader" if tracked else "torch DataLoader"
            print(
                f"streamx {mode:<8} {how:<19}: {n / s / 1e6:8.2f} M tokens/s ({n} tokens), "
                f"{n / s / (lit_tokens / lit_s):.2f}x litdata"
            )

    from streamx.packing import pack_best_fit

    ours = sum(
        len(pack_best_fit(docs[i : i + 1000], args.seq_len, truncate=True))
        for i in range(0, len(docs), 1000)
    )
    ffd = _ffd_bins([min(len(d), args.seq_len) for d in docs], args.seq_len)
    print(f"best_fit sequences {ours} vs offline FFD {ffd}: efficiency {ffd / ours:.4f} of FFD")


if __name__ == "__main__":
    main()
