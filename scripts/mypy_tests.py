"""Runs ``mypy --strict`` over the test suite, one directory at a time.

The tests are not packages: each directory of ``tests/`` has its own ``conftest.py`` and helper
modules (``nginx_server``, ``cli_run``, ...) that its tests import by bare name, the way pytest
puts a test's own directory and ``tests/`` itself on ``sys.path``. One mypy run over the whole
tree would see a dozen modules named ``conftest``, so each directory gets its own run. Its
search path is ``python/``, that directory, ``tests/``, then the other test directories: some
conftests put a sibling's helpers on ``sys.path`` (``remote_data``, ``s3_bucket``...), and a
helper mypy could not find would silently be ``Any`` under ``--ignore-missing-imports``
(helper names are unique across directories; only ``conftest`` repeats, and nothing imports
it by name).

The runs share one cache (the libraries are analysed once; a ``conftest`` cached by another
directory's run is stale by its path, and checked again).

Usage: ``python scripts/mypy_tests.py [--cache-dir DIR] [TESTS_SUBDIR...]`` (exit 1 when any
run reports an error). ``make lint`` runs it after the package's own ``mypy``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
FLAGS = ("--strict", "--ignore-missing-imports", "--no-warn-unused-ignores")


def test_dirs(tests: Path) -> list[Path]:
    """Every directory under ``tests`` (itself included) that holds a ``.py`` file."""
    found = {path.parent for path in tests.rglob("*.py") if "__pycache__" not in path.parts}
    return sorted(found)


def check(
    directory: Path, siblings: list[Path], cache_dir: Path
) -> subprocess.CompletedProcess[str]:
    """One mypy run over ``directory``'s own ``.py`` files, importing as pytest does."""
    others = [d for d in siblings if d not in (directory, TESTS)]
    search = [ROOT / "python", directory, TESTS, *others]
    env = {**os.environ, "MYPYPATH": os.pathsep.join(str(p) for p in search)}
    files = sorted(p.name for p in directory.glob("*.py"))
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        *FLAGS,
        "--cache-dir",
        str(cache_dir),
        *files,
    ]
    return subprocess.run(cmd, cwd=directory, env=env, capture_output=True, text=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=ROOT / ".mypy_cache" / "tests")
    parser.add_argument("dirs", nargs="*", type=Path, help="directories under tests/ (all)")
    args = parser.parse_args(argv)
    every = test_dirs(TESTS)
    dirs = [d.resolve() for d in args.dirs] if args.dirs else every
    failed = []
    for directory in dirs:
        result = check(directory, every, args.cache_dir.resolve())
        label = directory.relative_to(ROOT).as_posix()
        status = "ok" if result.returncode == 0 else "FAILED"
        summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"{label}: {status}: {summary}", flush=True)
        if result.returncode != 0:
            failed.append(label)
            sys.stdout.write(result.stdout)
            sys.stderr.write(result.stderr)
    if failed:
        print(f"mypy --strict failed in {len(failed)} of {len(dirs)}: {', '.join(failed)}")
        return 1
    print(f"mypy --strict: {len(dirs)} test directories clean")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
