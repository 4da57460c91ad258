"""A small registry of Stream classes, selected by ``StreamingDataset(stream_name=...)``."""

from __future__ import annotations

from typing import Any

from streamx.dataset.stream import Stream

__all__ = ["StreamRegistry", "streams_registry"]


class StreamRegistry:
    """Name -> Stream subclass."""

    def __init__(self) -> None:
        self._classes: dict[str, Any] = {"stream": Stream}

    def register(self, name: str, func: Any) -> None:
        """Registers ``func`` (a Stream subclass) under ``name``."""
        self._classes[name] = func

    def get(self, name: str) -> Any:
        """Returns the class registered as ``name``."""
        try:
            return self._classes[name]
        except KeyError:
            raise ValueError(
                f"Unknown stream name {name!r}; registered: {sorted(self._classes)}"
            ) from None


streams_registry = StreamRegistry()
