"""Helpers shared by the end-to-end benchmarks: subprocess workers, timing, tables, results.

Every measurement runs in a fresh interpreter (``run_worker``), so neither library pays for
state the other left behind (mosaicml-streaming keeps shared memory and file descriptors
per ``StreamingDataset``), and page-cache warmth is the only thing carried between runs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
LIBS = ("streamx", "streaming")


# Credentials for the benches' local S3 servers (nginx and moto ignore signatures), so that
# every library takes its S3 route and none looks for an instance profile.
S3_BENCH_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def import_lib(lib: str) -> Any:
    """Imports ``streamx`` or mosaicml-streaming (``streaming``), cleaning mosaic's stale shm."""
    if lib == "streamx":
        import streamx

        return streamx
    import streaming
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()
    return streaming


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Returns ``(seconds, fn())`` measured with ``perf_counter``."""
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def timed_cpu(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Returns ``(wall seconds, CPU seconds of this process, fn())``. On a shared machine the
    CPU time is the steadier of the two, since waiting for a core does not count."""
    cpu = time.process_time()
    wall, value = timed(fn)
    return wall, time.process_time() - cpu, value


_COMPILED: set[str] = set()


def compile_streamx(env: dict[str, str] | None = None) -> None:
    """Writes the byte code of each streamx tree on ``PYTHONPATH`` (``env``'s, else this
    process's), once per tree, as ``pip install`` does. The peers in site-packages have
    theirs; where ``PYTHONDONTWRITEBYTECODE`` is set (this VM), every fresh interpreter would
    otherwise compile streamx's modules from source inside the clock of its first sample."""
    import compileall

    paths = (env if env is not None else os.environ).get("PYTHONPATH", "")
    for entry in filter(None, paths.split(os.pathsep)):
        tree = os.path.join(os.path.abspath(entry), "streamx")
        if tree not in _COMPILED and os.path.isfile(os.path.join(tree, "__init__.py")):
            compileall.compile_dir(tree, quiet=1)
            _COMPILED.add(tree)


def run_worker(
    script: Path, spec: dict[str, Any], timeout: float = 3600, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Runs ``script --worker JSON`` in a fresh interpreter (``env``: its environment, else
    this one's) and returns the JSON it prints on its last stdout line. Raises
    ``RuntimeError`` with the worker's stderr on failure."""
    compile_streamx(env)
    proc = subprocess.run(
        [sys.executable, str(script), "--worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"worker {spec} failed with code {proc.returncode}:\n{proc.stderr[-4000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_rows(
    script: Path,
    specs: Iterable[dict[str, Any]],
    *,
    label: str,
    timeout: float,
    pythonpath: str | None = None,
) -> list[dict[str, Any]]:
    """Each spec's row from ``script`` in a fresh interpreter (:func:`run_worker`), printed as
    it comes, labelled ``label``; ``pythonpath`` goes on ``PYTHONPATH`` (another tree's code).
    A row that fails or runs out of time records why, and the rest still run."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    rows = []
    for spec in specs:
        try:
            row = run_worker(script, spec, timeout=timeout, env=env)
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            row = {**spec, "error": str(err).strip().splitlines()[-1][:80]}
        row["label"] = label
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def worker_main(argv: list[str], dispatch: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """If ``argv`` is ``['--worker', JSON]``, runs ``dispatch(spec)``, prints its JSON result
    and returns ``True``; otherwise returns ``False`` so the caller runs as orchestrator."""
    if len(argv) != 2 or argv[0] != "--worker":
        return False
    result = dispatch(json.loads(argv[1]))
    sys.stdout.flush()
    print(json.dumps(result))
    return True


def timed_pass(
    make: Callable[[], Iterable[Any]], ids_of: Callable[[Any], Any], rows: int
) -> dict[str, Any]:
    """Times one pass over the batches ``make()`` builds (built inside the clock, so the time
    to the first batch includes the dataset's construction); ``ids_of(batch)`` are the row ids
    each batch holds. ``correct``: every id in ``[0, rows)`` came exactly once."""
    import numpy as np

    seen = np.zeros(rows, np.int32)
    first = None
    start = time.perf_counter()
    total = 0
    for batch in make():
        if first is None:
            first = time.perf_counter() - start
        ids = np.asarray(ids_of(batch))
        total += len(ids)
        np.add.at(seen, np.clip(ids, 0, rows - 1), 1)
    seconds = time.perf_counter() - start
    correct = bool((seen == 1).all()) and total == rows
    return {"ttfs": first, "seconds": seconds, "rows_s": total / seconds, "correct": correct}


def status_mib(field: str, pid: int | str = "self") -> float:
    """A memory figure of ``/proc/<pid>/status`` in MiB (``VmHWM``: the peak resident size).
    Not ``ru_maxrss``: Linux carries the parent's high-water mark into it over ``fork`` and
    ``exec``, so a child of a large process reports the parent's peak."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} missing from /proc/{pid}/status")


def digest(values: Iterable[Any]) -> str:
    """A short sha256 over ``repr`` of each value (bytes are hashed as they are)."""
    hasher = hashlib.sha256()
    for value in values:
        hasher.update(value if isinstance(value, bytes) else repr(value).encode())
    return hasher.hexdigest()[:16]


def dir_bytes(path: str | Path) -> int:
    """Total size of the regular files directly under ``path``."""
    return sum(p.stat().st_size for p in Path(path).iterdir() if p.is_file())


def same_files(left: str | Path, right: str | Path) -> bool:
    """Whether two directories hold the same file names with identical bytes."""
    names = sorted(p.name for p in Path(left).iterdir() if p.is_file())
    if names != sorted(p.name for p in Path(right).iterdir() if p.is_file()):
        return False
    return all((Path(left) / n).read_bytes() == (Path(right) / n).read_bytes() for n in names)


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    import numpy as np

    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "loadavg_at_start": os.getloadavg(),
    }
    for lib, module in (("streamx", "streamx"), ("streaming", "streaming")):
        try:
            info[lib] = __import__(module).__version__
        except (ImportError, AttributeError):
            info[lib] = None
    return info


def format_table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> str:
    """Renders ``rows`` as a Markdown table; ``columns`` are ``(key, header, format spec)``."""
    cells = [[h for _, h, _ in columns]]
    for row in rows:
        cells.append(
            ["-" if row.get(key) is None else format(row[key], spec) for key, _, spec in columns]
        )
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = [
        "| " + " | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    return "\n".join(lines)


def write_results(name: str, payload: dict[str, Any]) -> Path:
    """Writes ``payload`` to ``results/<name>-<UTC time>.json`` and ``<name>-latest.json``."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    payload = {"benchmark": name, "utc": stamp, **payload}
    text = json.dumps(payload, indent=2, sort_keys=True)
    path = RESULTS_DIR / f"{name}-{stamp}.json"
    path.write_text(text)
    (RESULTS_DIR / f"{name}-latest.json").write_text(text)
    return path
