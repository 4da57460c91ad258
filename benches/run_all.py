"""Runs every ``benches/bench_*.py`` script in its own process (``make bench``).

Extra options (``--quick``, ``--before DIR``) go to each script that declares them (an
``add_argument`` call naming the option): a script without a quick mode runs as it is,
rather than failing on an option it does not know. Exits non-zero if any script failed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent


def declared_options(script: Path) -> frozenset[str]:
    """The options ``script``'s argument parser declares (the option strings of its
    ``add_argument`` calls)."""
    tree = ast.parse(script.read_text(encoding="utf-8"), str(script))
    return frozenset(
        arg.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value[:1] == "-"
    )


def option_groups(argv: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``argv`` as (option name, its tokens): ``--quick``, ``--before DIR``, ``--runs=3``.

    Raises:
        SystemExit: If ``argv`` starts with a value that no option precedes.
    """
    groups: list[tuple[str, list[str]]] = []
    for token in argv:
        if token.startswith("-"):
            groups.append((token.split("=", 1)[0], [token]))
        elif groups:
            groups[-1][1].append(token)
        else:
            raise SystemExit(f"run_all.py: {token!r} is not an option (only options are passed on)")
    return groups


def arguments_for(script: Path, argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The tokens of ``argv`` that ``script`` takes, and the options it does not declare."""
    declared = declared_options(script)
    taken: list[str] = []
    left: list[str] = []
    for option, tokens in option_groups(argv):
        if option in declared:
            taken.extend(tokens)
        else:
            left.append(option)
    return taken, left


def main(argv: list[str], scripts: Sequence[Path] | None = None) -> int:
    """Runs ``scripts`` (every ``bench_*.py``, in name order); returns the number that failed."""
    option_groups(argv)  # a stray value is refused before anything runs
    failed = []
    for script in sorted(HERE.glob("bench_*.py")) if scripts is None else scripts:
        taken, left = arguments_for(script, argv)
        note = [f"(takes no {', '.join(left)})"] if left else []
        print(" ".join(["==", script.name, *taken, *note]), flush=True)
        code = subprocess.run([sys.executable, str(script), *taken], check=False).returncode
        if code != 0:
            failed.append(script.name)
            print(f"== {script.name} exited with {code}", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return len(failed)


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1:]) else 0)
