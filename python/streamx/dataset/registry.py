"""``streams_registry``: the Stream classes ``StreamingDataset(stream_name=...)`` can build."""

from __future__ import annotations

from streamx.dataset.registry_utils import TypedRegistry, create_registry
from streamx.dataset.stream import Stream

__all__ = ["streams_registry"]

#: Stream subclasses by name; packages may add theirs through the
#: ``streamx_streams_registry`` entry point group.
streams_registry: TypedRegistry[type[Stream]] = create_registry(
    "streamx",
    "streams_registry",
    generic_type=type[Stream],  # type: ignore[arg-type]
    entry_points=True,
    description="Stream classes that StreamingDataset(stream_name=...) can build.",
)
streams_registry.register("stream", func=Stream)
