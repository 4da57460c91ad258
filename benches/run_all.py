"""Runs every ``benches/bench_*.py`` script in its own process (``make bench``).

Extra options (``--quick``, ``--before DIR``) go to each script that declares them (an
``add_argument`` call naming the option), rather than failing a script on an option it does
not know. Under ``--quick`` (a smoke run of seconds per script), a script without a quick
mode is skipped, not run at full size (minutes), and listed as skipped at the end. Exits
non-zero if any script failed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUICK = "--quick"


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
    groups = option_groups(argv)  # a stray value is refused before anything runs
    quick = any(option == QUICK for option, _ in groups)
    failed, skipped = [], []
    for script in sorted(HERE.glob("bench_*.py")) if scripts is None else scripts:
        taken, left = arguments_for(script, argv)
        if quick and QUICK in left:
            skipped.append(script.name)
            print(f"== {script.name} skipped (no {QUICK} mode: it runs at full size)", flush=True)
            continue
        note = [f"(takes no {', '.join(left)})"] if left else []
        print(" ".join(["==", script.name, *taken, *note]), flush=True)
        code = subprocess.run([sys.executable, str(script), *taken], check=False).returncode
        if code != 0:
            failed.append(script.name)
            print(f"== {script.name} exited with {code}", flush=True)
    if skipped:
        print(f"skipped (no {QUICK} mode): {', '.join(skipped)}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return len(failed)


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1:]) else 0)
