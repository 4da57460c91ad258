"""mosaicml-streaming's ``streaming.base.util``: :mod:`streamx.util` and ``merge_index``."""

from streamx.storage.merge_index import merge_index
from streamx.util import (
    bytes_to_int,
    clean_stale_shared_memory,
    get_import_exception_message,
    get_list_arg,
    number_abbrev_to_int,
    retry,
    wait_for_file_to_exist,
)

__all__ = [
    "bytes_to_int",
    "clean_stale_shared_memory",
    "get_import_exception_message",
    "get_list_arg",
    "merge_index",
    "number_abbrev_to_int",
    "retry",
    "wait_for_file_to_exist",
]
