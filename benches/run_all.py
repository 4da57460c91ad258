"""Runs every ``benches/bench_*.py`` script in its own process (``make bench``).

Extra arguments (e.g. ``--quick``) are passed to every script. Exits non-zero if any failed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    """Runs the scripts in name order; returns the number that failed."""
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"== {script.name} {' '.join(argv)}", flush=True)
        code = subprocess.run([sys.executable, str(script), *argv], check=False).returncode
        if code != 0:
            failed.append(script.name)
            print(f"== {script.name} exited with {code}", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return len(failed)


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1:]) else 0)
