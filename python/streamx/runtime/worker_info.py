"""DataLoader worker info without importing torch.

A process can only be a DataLoader worker if torch is already imported in it, so a process
without ``torch.utils.data`` in ``sys.modules`` has no worker info, and ``import streamx``
never pays for importing torch.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch.utils.data._utils.worker import WorkerInfo

__all__ = ["get_worker_info"]


def get_worker_info() -> WorkerInfo | None:
    """torch's ``get_worker_info()`` inside a DataLoader worker, else ``None``."""
    if "torch.utils.data" not in sys.modules:
        return None
    # Already imported (checked above): this costs a dict lookup, not torch's import time.
    from torch.utils.data import get_worker_info as torch_worker_info

    return torch_worker_info()
