"""Which methods a subclass overrides, worked out once per class.

mosaicml-streaming's users subclass ``StreamingDataset`` and ``Stream`` and override their
hooks; streamx takes its fast paths only where a hook is the base's own. Asking on every
epoch, sample or shard would repeat the same attribute walk, and asking in several places
risks two of them disagreeing: every site asks here, and the answer is cached per class.
"""

from __future__ import annotations

__all__ = ["overridden"]

# (cls, base, names) -> the answer. Classes live as long as the program, as do their entries.
_answers: dict[tuple[type, type, tuple[str, ...]], frozenset[str]] = {}


def overridden(cls: type, base: type, names: tuple[str, ...]) -> frozenset[str]:
    """The names among ``names`` that ``cls`` resolves to something other than ``base`` does.

    Args:
        cls: The class asked about (a subclass of ``base``, or ``base`` itself).
        base: The class whose methods are the fast path's own.
        names: The methods (or properties) that matter to the caller.
    """
    key = (cls, base, names)
    answer = _answers.get(key)
    if answer is None:
        answer = frozenset(n for n in names if getattr(cls, n) is not getattr(base, n))
        _answers[key] = answer
    return answer
