"""How busy the machine and a server were while one measurement ran: on a small shared VM,
the server's own work (nginx's TLS encryption, say) comes out of the same cores as the
reader's, which a real object store's does not."""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil


def _busy_and_total() -> tuple[float, float]:
    with open("/proc/stat") as stat:
        fields = [float(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _tree_cpu(pid: int) -> float:
    try:
        root = psutil.Process(pid)
        total = 0.0
        for proc in (root, *root.children(recursive=True)):
            times = proc.cpu_times()
            total += times.user + times.system
        return total
    except psutil.Error:
        return 0.0


@dataclass
class CpuWatch:
    """Started before a measurement; :meth:`stop` gives the share of all cores that were busy
    and the CPU seconds the process tree ``server_pid`` used meanwhile."""

    server_pid: int

    def __post_init__(self) -> None:
        self._busy, self._total = _busy_and_total()
        self._server = _tree_cpu(self.server_pid)

    def stop(self) -> dict[str, float]:
        busy, total = _busy_and_total()
        elapsed = max(total - self._total, 1.0)
        ticks = os.sysconf("SC_CLK_TCK")
        return {
            "busy": (busy - self._busy) / elapsed,
            "server_cpu_s": _tree_cpu(self.server_pid) - self._server,
            "cores": float(os.cpu_count() or 1),
            "elapsed_core_s": elapsed / ticks,
        }
