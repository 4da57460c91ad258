"""DataLoader worker info without importing torch; it lives in :mod:`streamx.runtime`,
below ``order/`` and ``dataset/``, which need it too."""

from streamx.runtime.worker_info import get_worker_info

__all__ = ["get_worker_info"]
