"""The install line users copy names our distribution, ``streamx-data`` (``streamx`` on PyPI
is an unrelated project), and works as written against the built wheel."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import tomllib
from release_env import (
    DIST_NAME,
    ROOT,
    Artifacts,
    clean_env,
    expose_torch,
    make_venv,
    run,
    wheel_metadata_field,
)

# `pip install "NAME[extra,...]"` (either quote) in docs, docstrings and error messages.
PIP_LINE = re.compile(r"""pip install ["']([A-Za-z0-9_.-]+)\[([a-z0-9,_-]+)\]["']""")
DOCS = [
    "README.md",
    "CONTRIBUTING.md",
    *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("docs/*.md")),
]
SOURCES = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("python/streamx/**/*.py"))


def install_lines(paths: list[str]) -> list[tuple[str, str, list[str]]]:
    """(file, distribution, extras) for every ``pip install "NAME[...]"`` in ``paths``."""
    found = []
    for rel in paths:
        for name, extras in PIP_LINE.findall((ROOT / rel).read_text(encoding="utf-8")):
            found.append((rel, name, extras.split(",")))
    return found


def readme_line() -> tuple[str, list[str]]:
    (line,) = install_lines(["README.md"])
    return line[1], line[2]


def test_pyproject_names_the_distribution() -> None:
    with (ROOT / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    assert project["name"] == DIST_NAME
    extras = project["optional-dependencies"]
    # [all] is every extra a user may want for data and the CLI, through self-references.
    (everything,) = extras["all"]
    name, _, rest = everything.partition("[")
    assert name == DIST_NAME
    assert {"convert", "simulator", "torch", "s3"} <= set(rest.rstrip("]").split(","))


def test_every_install_line_names_the_distribution() -> None:
    lines = install_lines(DOCS + SOURCES)
    files = {f for f, _, _ in lines}
    assert {"README.md", "docs/getting-started.md", "docs/migrating.md"} <= files, files
    assert all(name == DIST_NAME for _, name, _ in lines), [x for x in lines if x[1] != DIST_NAME]
    for rel in ("README.md", "docs/getting-started.md", "docs/migrating.md"):
        text = " ".join((ROOT / rel).read_text(encoding="utf-8").split())
        assert "`pip install streamx` installs an unrelated project" in text or (
            "(`pip install streamx` is an unrelated project)" in text
        ), f"{rel} should say that `pip install streamx` is not this project"


@pytest.mark.release
def test_wheel_offers_every_documented_extra(artifacts: Artifacts) -> None:
    offered = set(wheel_metadata_field(artifacts.x86_64, "Provides-Extra"))
    for rel, _, extras in install_lines(DOCS + SOURCES):
        missing = {e for e in extras if "{" not in e} - offered
        assert not missing, f"{rel} names extras the wheel lacks: {missing}"
    assert wheel_metadata_field(artifacts.x86_64, "Name") == [DIST_NAME]


@pytest.mark.release
@pytest.mark.timeout(900)
def test_readme_install_line_in_a_fresh_venv(artifacts: Artifacts, tmp_path: Path) -> None:
    """The README's line, as written, with the release folder as the only place that has
    ``streamx-data``; torch is linked from this interpreter instead of downloaded."""
    pytest.importorskip("torch", reason="the release check links the running venv's torch")
    name, extras = readme_line()
    venv = tmp_path / "venv"
    make_venv(Path(sys.executable), venv)
    expose_torch(venv)
    env = clean_env(venv)
    spec = f"{name}[{','.join(extras)}]"
    find: list[str | Path] = ["--find-links", artifacts.x86_64.parent]
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", *find, spec], cwd=tmp_path,
        env=env, timeout=600)  # fmt: skip
    code = "from streamx import MDSWriter, StreamingDataset; import s3fs, torch; print('ok')"
    out = run([venv / "bin" / "python", "-c", code], cwd=tmp_path, env=env, timeout=120)
    assert out.strip() == "ok"
