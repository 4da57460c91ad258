"""Which hooks a subclass overrides is worked out once per class (issue 22), and every fast
path asks the same table: a subclass of mosaic's kind still gets its own hooks called."""

from __future__ import annotations

from typing import Any

import streamx
from streamx.runtime.overrides import overridden


class _Base:
    def get_item(self, i: int) -> int:
        return i

    @property
    def size(self) -> int:
        return 0


class _Sub(_Base):
    def get_item(self, i: int) -> int:
        return -i


def test_names_the_overridden_hooks_only() -> None:
    assert overridden(_Base, _Base, ("get_item", "size")) == frozenset()
    assert overridden(_Sub, _Base, ("get_item", "size")) == {"get_item"}


def test_the_answer_is_computed_once_per_class() -> None:
    first = overridden(_Sub, _Base, ("get_item",))
    assert overridden(_Sub, _Base, ("get_item",)) is first


def test_a_dataset_subclass_overriding_get_item_is_honoured(tmp_path: Any) -> None:
    with streamx.MDSWriter(out=str(tmp_path), columns={"x": "int"}) as writer:
        for i in range(5):
            writer.write({"x": i})

    class Doubled(streamx.StreamingDataset):
        def get_item(self, sample_id: int, retry: int = 7) -> Any:
            sample = super().get_item(sample_id, retry)
            return {"x": 2 * sample["x"]}

    plain = streamx.StreamingDataset(local=str(tmp_path), batch_size=1)
    doubled = Doubled(local=str(tmp_path), batch_size=1)
    assert [s["x"] for s in plain] == [0, 1, 2, 3, 4]
    assert [s["x"] for s in doubled] == [0, 2, 4, 6, 8]
    assert [doubled[i]["x"] for i in range(5)] == [0, 2, 4, 6, 8]
    assert overridden(Doubled, streamx.StreamingDataset, ("get_item",)) == {"get_item"}
