"""``PackedDataset``: a dataset of token documents read as packed fixed-length sequences.

Determinism: the documents' global order is a permutation of ``range(len(dataset))`` fixed by
``seed`` and the epoch alone. That order is cut into windows of ``buffer_size`` documents, and
each window is packed on its own, so the packed sequences of a window depend only on the seed
and the configuration. Consumers (ranks x DataLoader workers) take whole windows round-robin:
the world size and worker count decide who packs a window, never what it holds.

Resume: the state is the windows done (:mod:`streamx.packing.windows_done`: runs and
per-consumer counts, small at any epoch size) and, for the rest, the sequences handed out,
counted where training receives them: in this process when it iterates the dataset, and through
DataLoader workers by :meth:`PackedDataset.tracked_batches` (``StreamingDataLoader`` uses
it), whose items carry their provenance back to this process (:mod:`streamx.packing.tracked`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from streamx.order.permutation import Permutation
from streamx.packing.consumers import consumer
from streamx.packing.documents import (
    Documents,
    document_count,
    end_loader_pass,
    read_documents,
)
from streamx.packing.merged_state import merge_states
from streamx.packing.pack import PackedSequence, pack_best_fit, pack_concat
from streamx.packing.provenance import Provenance, Tagged
from streamx.packing.windows_done import Progress

if TYPE_CHECKING:
    from torch.utils.data import DataLoader

__all__ = ["PackedDataset"]

_MODES = ("concat", "best_fit")
# The shuffled order's name in the configuration: states of the earlier order (a numpy
# permutation of every document, which no longer fits memory at 10^10) are refused by it.
_SHUFFLED_ORDER = "feistel"
_EARLIER_ORDER = (
    " (a shuffled state from streamx before the O(1)-memory order: its documents' order differs)"
)
# Keys the order's permutation apart from a mixture's over the same seed ("pack").
_ORDER_TAG = 0x7061636B


try:
    from torch.utils.data import IterableDataset as _Base
except ImportError:  # pragma: no cover - torch is a dependency of the loader path
    _Base = object  # type: ignore[assignment,misc]


class PackedDataset(_Base):  # type: ignore[misc,valid-type,type-arg]
    """Packs the ``column`` documents (1-D integer token arrays) of ``dataset`` into sequences
    of ``seq_len`` tokens.

    Args:
        dataset: Map-style documents (a ``StreamingDataset``, or any ``len``/``[]`` source).
        column: The sample field holding the token array.
        seq_len: Tokens per packed sequence (at least 1).
        mode: ``'concat'`` joins documents and splits every ``seq_len`` tokens, a document's
            remainder continuing in the next sequence; ``'best_fit'`` places whole documents
            into sequences by best-fit decreasing over each buffer.
        buffer_size: Documents packed together (one window).
        eos_id: A token appended to each document, when given.
        pad_id: The token that fills a sequence's unused tail.
        truncate: Under ``best_fit``, cut documents longer than ``seq_len`` instead of failing.
        token_budget: When given, iteration yields lists of sequences whose token count
            (non-pad tokens) stays within the budget, instead of single sequences.
        shuffle: Visit documents in a seeded random order (else in index order).
        seed: The order's seed.
    """

    def __init__(
        self,
        dataset: Documents,
        *,
        column: str = "tokens",
        seq_len: int,
        mode: str = "concat",
        buffer_size: int = 1024,
        eos_id: int | None = None,
        pad_id: int = 0,
        truncate: bool = False,
        token_budget: int | None = None,
        shuffle: bool = False,
        seed: int = 0,
    ) -> None:
        if seq_len < 1:
            raise ValueError(f"seq_len must be at least 1 token, got {seq_len}")
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be at least 1 document, got {buffer_size}")
        if token_budget is not None and token_budget < 1:
            raise ValueError(f"token_budget must be at least 1 token, got {token_budget}")
        if token_budget is not None and token_budget < seq_len:
            raise ValueError(
                f"token_budget={token_budget} is below seq_len={seq_len}: no sequence fits"
            )
        self.dataset = dataset
        self.column = column
        self.seq_len = seq_len
        self.mode = mode
        self.buffer_size = buffer_size
        self.eos_id = eos_id
        self.pad_id = pad_id
        self.truncate = truncate
        self.token_budget = token_budget
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self._progress = Progress()  # windows fully yielded (this process, or loaded)
        self._partial: dict[int, int] = {}  # window -> sequences already yielded
        # The epoch's document order, evaluated a window at a time in O(1) memory.
        self._permutation: Permutation | None = None

    # -- configuration and state --------------------------------------------------------

    def config(self) -> dict[str, object]:
        """The fields that decide the packed stream; a state dict must match them."""
        config: dict[str, object] = {
            "column": self.column,
            "seq_len": self.seq_len,
            "mode": self.mode,
            "buffer_size": self.buffer_size,
            "eos_id": self.eos_id,
            "pad_id": self.pad_id,
            "truncate": self.truncate,
            "token_budget": self.token_budget,
            "shuffle": self.shuffle,
            "seed": self.seed,
            "num_documents": document_count(self.dataset),
        }
        if self.shuffle:
            config["order"] = _SHUFFLED_ORDER
        return config

    def state_dict(self) -> dict[str, object]:
        """Progress of this process: the windows done and the sequences yielded of the rest
        (with DataLoader workers, those this process received: see :meth:`tracked_batches`).
        Merge the ranks' dicts with :meth:`merge_states` to resume at any world size."""
        state: dict[str, object] = {
            "config": self.config(),
            "epoch": self.epoch,
            **self._progress.state(),
            "partial": dict(sorted(self._partial.items())),
        }
        documents = self._documents_state()
        if documents is not None:
            state["documents"] = documents
        return state

    def _documents_state(self) -> dict[str, object] | None:
        """The documents' own state (a ``MixedDataset``'s ``state_at``) over every document
        this state touched, so that loading it checks the documents too; ``None`` for a
        source without one."""
        state_at = getattr(self.dataset, "state_at", None)
        if state_at is None:
            return None
        if self.shuffle or self.epoch > 0:
            n = document_count(self.dataset)  # not a prefix of the documents: count them all
        else:
            last = max([self._progress.last(), *self._partial])
            n = min(document_count(self.dataset), (last + 1) * self.buffer_size)
        return dict(state_at(n))

    @staticmethod
    def merge_states(states: Sequence[Mapping[str, Any]]) -> dict[str, object]:
        """One state from every rank's: windows done by any rank, partial offsets of the rest
        (:func:`streamx.packing.merged_state.merge_states`)."""
        return merge_states(states)

    @staticmethod
    def windows_done(state: Mapping[str, Any]) -> list[tuple[int, int]]:
        """The windows ``state`` (one rank's, or merged) records as done, as ``[start,
        end)`` runs."""
        return Progress.of_state(state).fold().pairs()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes from ``state`` (one rank's, or merged); raises ``ValueError`` naming the
        first configuration field that differs."""
        theirs = dict(state["config"])
        for key, mine in self.config().items():
            if theirs.get(key) != mine:
                why = _EARLIER_ORDER if key == "order" and theirs.get(key) is None else ""
                raise ValueError(
                    f"state dict is from a different packing configuration: {key!r} is "
                    f"{theirs.get(key)!r} there and {mine!r} here{why}"
                )
        check = getattr(self.dataset, "check_state", None)
        if check is not None and "documents" in state:
            check(state["documents"])
        self.epoch = int(state["epoch"])
        # The loaded windows become runs: the next pass deals what they leave.
        self._progress = Progress(runs=Progress.of_state(state).fold())
        self._partial = {
            int(w): int(n)
            for w, n in dict(state["partial"]).items()
            if not self._progress.is_done(int(w))
        }

    def set_epoch(self, epoch: int) -> None:
        """Starts ``epoch`` afresh (its own document order)."""
        self.epoch = epoch
        self._progress, self._partial = Progress(), {}

    # -- the stream ----------------------------------------------------------------------

    def window_documents(self, window: int) -> NDArray[np.int64]:
        """The document ids of ``window``, in packing order: positions ``window *
        buffer_size`` onwards of ``range(n)``, or of a seeded permutation of it that is
        evaluated for these positions only (a function of the seed and epoch)."""
        n = document_count(self.dataset)
        positions = np.arange(
            window * self.buffer_size, min(n, (window + 1) * self.buffer_size), dtype=np.int64
        )
        if not self.shuffle:
            return positions
        perm = self._permutation
        if perm is None or perm.n != n or perm.key != (self.seed, self.epoch, _ORDER_TAG):
            perm = self._permutation = Permutation(n, (self.seed, self.epoch, _ORDER_TAG))
        return perm.many(positions)

    def num_windows(self) -> int:
        """Windows of ``buffer_size`` documents in an epoch."""
        return -(-document_count(self.dataset) // self.buffer_size)

    def pack_window(self, window: int) -> list[PackedSequence]:
        """The packed sequences of ``window``: a function of the seed, epoch and config only."""
        ids = self.window_documents(window).tolist()
        # One read for the window's documents: a batch into Rust where the source offers it.
        docs = [
            self._tokens(i, d) for i, d in zip(ids, read_documents(self.dataset, ids), strict=True)
        ]
        if self.mode == "concat":
            return pack_concat(docs, self.seq_len, eos_id=self.eos_id, pad_id=self.pad_id)
        return pack_best_fit(
            docs, self.seq_len, eos_id=self.eos_id, pad_id=self.pad_id, truncate=self.truncate
        )

    def _tokens(self, index: int, document: Any) -> NDArray[np.int64]:
        """Document ``index``'s tokens, flat.

        Raises:
            ValueError: If the document has no ``column`` (naming the document and its keys).
        """
        try:
            tokens = document[self.column]
        except (KeyError, IndexError, TypeError) as err:
            keys = sorted(map(str, document)) if isinstance(document, Mapping) else None
            has = f"its keys are {keys}" if keys is not None else type(document).__name__
            raise ValueError(
                f"Document {index} has no column {self.column!r} ({has}): pass column= "
                "the one that holds its token ids"
            ) from err
        return np.asarray(tokens).astype(np.int64, copy=False).ravel()

    def _windows(self) -> Iterator[int]:
        """This consumer's windows: the epoch's unfinished windows, dealt round-robin."""
        me, consumers = consumer()
        self._progress.deal(consumers)
        return self._progress.turns(me, self.num_windows())

    def _stream(self) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
        """(window, index, sequences in window, sequence) of this consumer, skipping what the
        state says was yielded."""
        for window in self._windows():
            seqs = self.pack_window(window)
            for j in range(self._partial.get(window, 0), len(seqs)):
                s = seqs[j]
                yield (
                    window,
                    j,
                    len(seqs),
                    {
                        "input_ids": s.input_ids,
                        "position_ids": s.position_ids,
                        "cu_seqlens": s.cu_seqlens,
                        "num_tokens": s.num_tokens,
                    },
                )

    def _mark(self, window: int, j: int, total: int) -> None:
        """Records that sequence ``j`` of ``window`` (of ``total``) has been handed out."""
        if j + 1 == total:
            self._partial.pop(window, None)
            self._progress.finish(window)
        else:
            self._partial[window] = j + 1

    def tagged(self) -> Iterator[Tagged]:
        """This consumer's items (sequences, or token-budget lists of them), each with the
        provenance of its sequences; records nothing (see :meth:`record`)."""
        if self.token_budget is None:
            for window, j, total, seq in self._stream():
                yield [(window, j, total)], seq
            return
        batch: list[tuple[int, int, int, dict[str, Any]]] = []
        used = 0
        for item in self._stream():
            # The budget counts real (non-pad) tokens, as a varlen kernel sees them.
            n = int(item[3]["num_tokens"])
            if batch and used + n > self.token_budget:
                yield [(w, j, total) for w, j, total, _ in batch], [seq for *_, seq in batch]
                batch, used = [], 0
            batch.append(item)
            used += n
        if batch:
            yield [(w, j, total) for w, j, total, _ in batch], [seq for *_, seq in batch]

    def record(self, provenance: Sequence[Provenance]) -> None:
        """Records these sequences as handed out: the state then resumes after them."""
        for window, j, total in provenance:
            self._mark(window, j, total)

    def tracked_batches(self, loader: DataLoader) -> Iterator[Any]:  # type: ignore[type-arg]
        """The batches ``loader`` (a torch ``DataLoader`` over this dataset) gives, with this
        dataset's state following what this process received, however far its workers ran
        ahead. ``StreamingDataLoader`` iterates a ``PackedDataset`` through this; with a
        plain ``DataLoader``, iterate ``packed.tracked_batches(loader)`` instead of
        ``loader``. See :mod:`streamx.packing.tracked` for the design."""
        from streamx.packing.tracked import tracked_batches

        if loader.dataset is not self:
            raise ValueError("tracked_batches: the loader iterates another dataset")
        # The loader's workers deal windows among ranks x workers; this process records what
        # they finish, so it deals the same way before they copy its state.
        rank_world = consumer()[1]  # no worker here: the world size
        self._progress.deal(rank_world * max(1, loader.num_workers))
        return tracked_batches(self, loader)

    def end_loader_pass(self) -> None:
        """Marks the end of a DataLoader's pass over this dataset, once its workers are gone
        (see ``StreamingDataset.end_loader_pass``): the documents' ledgers release what the
        exited workers left. :meth:`tracked_batches` calls it when the pass ends."""
        end_loader_pass(self.dataset)

    def __iter__(self) -> Iterator[Any]:
        # A sequence handed out counts as consumed: record it before yielding.
        for provenance, item in self.tagged():
            self.record(provenance)
            yield item
