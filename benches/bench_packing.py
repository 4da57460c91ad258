"""Token packing: tokens/s of streamx's PackedDataset (concat and best_fit) in a DataLoader
against LitData's TokensLoader and Megatron-Energon's packing (a ``TaskEncoder`` with
``select_samples_to_pack``/``pack_selected_samples`` and a packing buffer) on the same
tokens, and best_fit's packing efficiency against offline first-fit decreasing (FFD).

    .venv/bin/python benches/bench_packing.py [--docs 20000] [--seq-len 2048] [--workers 1]
                                              [--quick]

Energon is measured when ``megatron-energon`` is installed (``requirements/bench.txt``).
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader

try:
    import megatron.energon as energon
except ImportError:
    energon = None


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


if energon is not None:
    # Energon's sample types and task encoder, at module level so that the worker's packed
    # samples unpickle in the main process.

    @energon.edataclass
    class _EnergonDoc(energon.Sample):
        tokens: np.ndarray

    @energon.edataclass
    class _EnergonPacked(energon.Sample):
        input_ids: torch.Tensor
        position_ids: torch.Tensor
        cu_seqlens: torch.Tensor
        num_tokens: int

    @energon.stateless
    def _energon_cook(raw: dict) -> _EnergonDoc:
        # The tar member holds the raw int32 tokens (no decoder): the cheapest read energon
        # allows, so that its figure is its loader's and packing's cost, not npy parsing.
        return _EnergonDoc(
            **energon.basic_sample_keys(raw), tokens=np.frombuffer(raw["tokens"], np.int32)
        )

    class _EnergonPacker(energon.TaskEncoder):
        """First-fit over the packing buffer (in arrival order) into sequences of at most
        ``seq_len`` tokens; each pack becomes ``input_ids``/``position_ids`` padded to
        ``seq_len`` and ``cu_seqlens``, the fields streamx's ``PackedDataset`` yields."""

        cookers = (energon.Cooker(_energon_cook),)
        decoder = None

        def __init__(self, seq_len: int) -> None:
            self.seq_len = seq_len

        def select_samples_to_pack(self, samples: list[_EnergonDoc]) -> list[list[_EnergonDoc]]:
            packs: list[list[_EnergonDoc]] = []
            free: list[int] = []
            for s in samples:
                n = min(len(s.tokens), self.seq_len)
                for i, f in enumerate(free):
                    if f >= n:
                        packs[i].append(s)
                        free[i] -= n
                        break
                else:
                    packs.append([s])
                    free.append(self.seq_len - n)
            return packs

        @energon.stateless
        def pack_selected_samples(self, samples: list[_EnergonDoc]) -> _EnergonPacked:
            # numpy, then one torch.from_numpy per field: torch's small-op overhead (e.g.
            # repeat_interleave) cost more than the rest of energon's pipeline here.
            pieces = [s.tokens[: self.seq_len] for s in samples]
            lens = np.array([len(p) for p in pieces], np.int64)
            cu = np.zeros(len(pieces) + 1, np.int64)
            np.cumsum(lens, out=cu[1:])
            n = int(cu[-1])
            ids = np.zeros(self.seq_len, np.int64)
            ids[:n] = np.concatenate(pieces)
            pos = np.zeros(self.seq_len, np.int64)
            pos[:n] = np.arange(n) - np.repeat(cu[:-1], lens)
            input_ids = torch.from_numpy(ids)
            position_ids = torch.from_numpy(pos)
            cu_seqlens = torch.from_numpy(cu.astype(np.int32))
            return _EnergonPacked(
                __key__=samples[0].__key__,
                __restore_key__=(),
                input_ids=input_ids,
                position_ids=position_ids,
                cu_seqlens=cu_seqlens,
                num_tokens=n,
            )


def _energon_write(root: Path, docs: list[np.ndarray]) -> None:
    """The documents as one WebDataset tar (``NNNNNNNN.tokens``: raw int32), prepared by
    ``energon prepare`` as a crude dataset with every sample in the train split."""
    root.mkdir()
    with tarfile.open(root / "part-00000.tar", "w") as tar:
        for i, d in enumerate(docs):
            member = tarfile.TarInfo(f"{i:08d}.tokens")
            member.size = d.nbytes
            tar.addfile(member, io.BytesIO(d.tobytes()))
    energon_cli = Path(sys.executable).parent / "energon"
    subprocess.run(
        [
            str(energon_cli), "prepare", str(root), "--non-interactive", "--no-progress",
            "--split-ratio", "1,0,0", "--sample-type", "CrudeWebdataset", "--num-workers", "1",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip


def _energon(root: Path, seq_len: int, workers: int, savable: bool) -> tuple[int, float]:
    """One epoch (``repeat=False``) of energon's train dataset in index order (no slice
    shuffle, one shard iterator: the order streamx and LitData read in here), packed by
    :class:`_EnergonPacker` over a buffer of 1000 documents, one packed sequence per step
    (``batch_size=None``). ``savable``: ``get_savable_loader`` (resumable), else ``get_loader``.
    """
    assert energon is not None
    dataset = energon.get_train_dataset(
        str(root),
        worker_config=energon.WorkerConfig(rank=0, world_size=1, num_workers=workers),
        batch_size=None,
        packing_buffer_size=1000,
        shuffle_buffer_size=None,
        max_samples_per_sequence=None,
        shuffle_over_epochs_multiplier=None,
        parallel_shard_iters=1,
        task_encoder=_EnergonPacker(seq_len),
        repeat=False,
    )
    loader = (energon.get_savable_loader if savable else energon.get_loader)(dataset)
    start = time.perf_counter()
    tokens = sum(int(s.num_tokens) for s in loader)
    return tokens, time.perf_counter() - start


def _warm(root: Path) -> None:
    """Reads every file under ``root`` once, so that every reader starts from the page cache."""
    for p in sorted(root.rglob("*")):
        if p.is_file():
            p.read_bytes()


def _lit_item(doc: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(doc.astype(np.int32))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2000 documents")
    args = parser.parse_args()
    if args.quick:
        args.docs = min(args.docs, 2000)
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
        en = Path(tmp) / "energon"
        if energon is not None:
            _energon_write(en, docs)
        for root in (mds, lit, en):
            if root.exists():
                _warm(root)
        print(
            f"{args.docs} documents, {total} tokens, seq_len {args.seq_len}, "
            f"{args.workers} worker(s)"
        )
        rows: list[tuple[str, int, float]] = []
        n, s = _litdata(lit, args.seq_len, args.workers)
        rows.append(("litdata TokensLoader", n, n / s))
        if energon is not None:
            for savable in (True, False):
                n, s = _energon(en, args.seq_len, args.workers, savable)
                how = "get_savable_loader" if savable else "get_loader"
                rows.append((f"energon first-fit {how}", n, n / s))
        for mode, tracked in (("concat", True), ("best_fit", True), ("concat", False)):
            n, s = _streamx(mds, args.seq_len, mode, args.workers, tracked)
            how = "StreamingDataLoader" if tracked else "torch DataLoader"
            rows.append((f"streamx {mode} {how}", n, n / s))
        lit_rate = rows[0][2]
        energon_rate = rows[1][2] if energon is not None else None
        for name, n, rate in rows:
            line = f"{name:<36}: {rate / 1e6:8.2f} M tokens/s ({n} tokens), "
            line += f"{rate / lit_rate:.2f}x litdata"
            if energon_rate is not None:
                line += f", {rate / energon_rate:.2f}x energon"
            print(line)
        if energon is None:
            print("energon: not installed (pip install megatron-energon), not measured")

    from streamx.packing import pack_best_fit

    ours = sum(
        len(pack_best_fit(docs[i : i + 1000], args.seq_len, truncate=True))
        for i in range(0, len(docs), 1000)
    )
    ffd = _ffd_bins([min(len(d), args.seq_len) for d in docs], args.seq_len)
    print(f"best_fit sequences {ours} vs offline FFD {ffd}: efficiency {ffd / ours:.4f} of FFD")


if __name__ == "__main__":
    main()
