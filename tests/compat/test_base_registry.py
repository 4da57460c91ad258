"""``streamx.base.registry_utils`` and ``streams_registry``, the tests of mosaicml-streaming's
registry in streamx's words (namespaces renamed ``streaming`` -> ``streamx``)."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import catalogue
import pytest

from streamx.base import registry_utils
from streamx.base.stream import Stream, streams_registry

pytestmark = pytest.mark.compat


@pytest.fixture
def registry() -> Iterator[registry_utils.TypedRegistry[Any]]:
    with registry_utils.save_registry():
        yield registry_utils.create_registry("streamx", "test_registry", generic_type=str)


def test_streams_registry_holds_stream() -> None:
    assert isinstance(streams_registry, registry_utils.TypedRegistry)
    assert streams_registry.namespace == ("streamx", "streams_registry")
    assert streams_registry.get("stream") is Stream
    assert streams_registry.get_all() == {"stream": Stream}


def test_create_refuses_a_namespace_that_is_an_entry(registry: Any) -> None:
    # As in catalogue (and so mosaicml-streaming), only an exact key counts as existing.
    assert registry.namespace == ("streamx", "test_registry")
    with pytest.raises(catalogue.RegistryError, match="already exists"):
        registry_utils.create_registry("streamx", "streams_registry", "stream", generic_type=type)


def test_register_get_and_overwrite(registry: Any) -> None:
    registry.register("name", func="first")
    assert registry.get("name") == "first"
    registry.register("name", func="second")
    assert registry.get("name") == "second"
    with pytest.raises(catalogue.RegistryError, match="Cant't find 'missing'"):
        registry.get("missing")


def test_save_registry_restores_the_table() -> None:
    with registry_utils.save_registry():
        streams_registry.register("temporary", func=Stream)
        assert "temporary" in streams_registry
    assert "temporary" not in streams_registry


def test_import_file_registers_a_stream_class(tmp_path: Path) -> None:
    code = (
        "from streamx.base.stream import Stream, streams_registry\n"
        "@streams_registry.register('file_stream')\n"
        "class FileStream(Stream):\n"
        "    pass\n"
    )
    (tmp_path / "init_code.py").write_text(code)
    with registry_utils.save_registry():
        registry_utils.import_file(tmp_path / "init_code.py")
        assert issubclass(streams_registry.get("file_stream"), Stream)
    assert "file_stream" not in streams_registry


def test_import_file_errors(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("undefined_name\n")
    with pytest.raises(RuntimeError, match=r"Error executing .*broken.py"):
        registry_utils.import_file(tmp_path / "broken.py")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        registry_utils.import_file(tmp_path / "absent.py")


def test_entry_points_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    group = "streamx_ep_registry"
    point = EntryPoint(name="ep_stream", value="streamx.base.stream:Stream", group=group)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda: {group: [point]})
    monkeypatch.setattr(catalogue, "AVAILABLE_ENTRY_POINTS", {group: [point]})
    with registry_utils.save_registry():
        reg = registry_utils.create_registry(
            "streamx", "ep_registry", generic_type=type, entry_points=True
        )
        assert reg.get("ep_stream") is Stream
        assert reg.get_entry_point("ep_stream") is Stream


def test_construct_from_registry(registry: Any) -> None:
    class Mine(Stream):
        def __init__(self, value: int = 0) -> None:
            self.value = value

    class Unrelated:
        pass

    registry.register("mine", func=Mine)
    built = registry_utils.construct_from_registry(
        "mine", registry, pre_validation_function=Stream, kwargs={"value": 3}
    )
    assert isinstance(built, Mine)
    assert built.value == 3
    with pytest.raises(ValueError, match="Expected mine to be of type"):
        registry_utils.construct_from_registry("mine", registry, pre_validation_function=Unrelated)

    def refuse(_: Any) -> None:
        raise ValueError("Invalid")

    with pytest.raises(ValueError, match="Invalid"):
        registry_utils.construct_from_registry("mine", registry, pre_validation_function=refuse)
    with pytest.raises(ValueError, match="Invalid"):
        registry_utils.construct_from_registry("mine", registry, post_validation_function=refuse)

    registry.register("number", func=1)
    with pytest.raises(ValueError, match="Expected number to be a class or function"):
        registry_utils.construct_from_registry("number", registry)

    registry.register("product", func=lambda x, y: x * y)
    partial = registry_utils.construct_from_registry("product", registry, kwargs={"x": 2})
    assert partial(y=3) == 6

    registry.register("builder", func=lambda: Mine(9))
    built = registry_utils.construct_from_registry("builder", registry, partial_function=False)
    assert built.value == 9


def test_stream_name_builds_a_registered_stream(tmp_path: Path) -> None:
    from streamx import MDSWriter, StreamingDataset

    with MDSWriter(out=str(tmp_path / "data"), columns={"x": "int"}) as out:
        for i in range(6):
            out.write({"x": i})

    built: list[str] = []

    class Recording(Stream):
        def __init__(self, **kwargs: Any) -> None:
            built.append(kwargs["local"])
            super().__init__(**kwargs)

    with registry_utils.save_registry():
        streams_registry.register("recording", func=Recording)
        ds = StreamingDataset(local=str(tmp_path / "data"), stream_name="recording", batch_size=2)
        assert [ds[i]["x"] for i in range(ds.num_samples)] == list(range(6))
    assert built == [str(tmp_path / "data")]
