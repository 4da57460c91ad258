"""Any inputs through a user function (LitData's ``optimize(fn, inputs)`` shape): parts are
contiguous runs of inputs; ``fn(input)`` returns one sample (a dict) or yields several."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamx.convert.errors import ConvertError
from streamx.convert.sources.base import Part, Row, chunk_ranges, with_overrides
from streamx.convert.values import infer_from_sample, to_arrays

__all__ = ["FunctionSource"]


@dataclass(frozen=True)
class FunctionSource:
    """``fn`` over ``inputs``; both must pickle (a module-level function, plain inputs)."""

    fn: Callable[[Any], Any]
    inputs: Sequence[Any]
    per_part: int | None = None

    def describe(self) -> Mapping[str, Any]:
        name = f"{getattr(self.fn, '__module__', '')}.{getattr(self.fn, '__qualname__', '')}"
        return {"kind": "function", "fn": name, "inputs": len(self.inputs)}

    def columns(self, overrides: Mapping[str, str]) -> dict[str, str]:
        for _, _, sample in self._samples(0):
            return with_overrides(infer_from_sample(sample), overrides)
        raise ConvertError("fn(inputs[0]) gave no sample to infer the columns from; pass columns=.")

    def parts(self) -> list[Part]:
        return [
            Part(i, f"inputs {start} to {end - 1}", (start, end))
            for i, (start, end) in enumerate(chunk_ranges(len(self.inputs), self.per_part))
        ]

    def rows(self, part: Part, columns: Mapping[str, str]) -> Iterator[Row]:
        start, end = part.spec
        for position in range(start, end):
            for label, row, sample in self._samples(position):
                yield label, row, to_arrays(sample, columns)

    def _samples(self, position: int) -> Iterator[Row]:
        label = f"input {position}"
        try:
            out = self.fn(self.inputs[position])
            produced = out if inspect.isgenerator(out) else [out]
            for row, sample in enumerate(produced):
                if not isinstance(sample, dict):
                    raise ConvertError(
                        f"{label}: fn gave a {type(sample).__name__}, not a dict of columns."
                    )
                yield label, row, sample
        except ConvertError:
            raise
        except Exception as err:
            raise ConvertError(f"{label}: fn raised {type(err).__name__}: {err}") from err
