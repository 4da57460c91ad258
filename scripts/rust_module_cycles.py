"""Finds import cycles between the modules of a Rust crate.

A module's outgoing arrows are the ``crate::`` and ``super::`` paths it names (in ``use``
lines and in code), test modules left out; a cycle is a strongly connected set of two or more
modules. ``cargo`` allows such cycles, so nothing else would catch one: ``make lint`` and
``tests/test_rust_modules.py`` run this to keep the core's modules a layered graph, as
import-linter keeps the Python package's.

Usage: ``python scripts/rust_module_cycles.py CRATE_SRC_DIR...`` (exit 1 when a cycle exists).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

_TESTS = re.compile(r"^\s*#\[cfg\(test\)\]\s*\n\s*mod tests", re.M)
_COMMENT = re.compile(r"//[^\n]*")
_PATH = re.compile(r"\b(crate|super(?:::super)*)((?:::\w+)+)(::\{[^}]*\})?")


def modules(src: Path) -> dict[str, Path]:
    """``crate::a::b`` -> its file, for every ``.rs`` file under ``src``."""
    found = {}
    for path in sorted(src.rglob("*.rs")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        found["::".join(["crate", *parts])] = path
    return found


def arrows(src: Path) -> dict[str, set[str]]:
    """Module -> the other modules it names."""
    mods = modules(src)

    def owner(path: str) -> str | None:
        segments = path.split("::")
        while segments and "::".join(segments) not in mods:
            segments.pop()
        return "::".join(segments) or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        text = path.read_text(encoding="utf-8")
        tests = _TESTS.search(text)
        text = _COMMENT.sub("", text[: tests.start()] if tests else text)
        for match in _PATH.finditer(text):
            head, tail, group = match.groups()
            if head == "crate":
                base = "crate"
            else:
                base = "::".join(module.split("::")[: -head.count("super")])
            named = [base + tail]
            if group:
                items = (i.strip().split(" as ")[0] for i in group[3:-1].split(","))
                named += [f"{base}{tail}::{i}" for i in items if i and i != "self"]
            for target in named:
                other = owner(target)
                if other is not None and other != module:
                    graph[module].add(other)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def report(src: Path) -> Iterator[str]:
    """One line per cycle, naming its modules and the arrows inside it."""
    graph = arrows(src)
    for component in cycles(graph):
        inside = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
        yield f"{src}: cycle between {', '.join(component)} ({'; '.join(inside)})"


def main(argv: list[str]) -> int:
    problems = [line for src in argv for line in report(Path(src))]
    for line in problems:
        print(line)
    if not problems:
        print(f"no module cycles in {', '.join(argv)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
