"""mosaicml-streaming's ``streaming.base.registry_utils``, from streamx's own registries."""

from streamx.dataset.registry_utils import (
    TypedRegistry,
    construct_from_registry,
    create_registry,
    import_file,
    save_registry,
)

__all__ = [
    "TypedRegistry",
    "construct_from_registry",
    "create_registry",
    "import_file",
    "save_registry",
]
