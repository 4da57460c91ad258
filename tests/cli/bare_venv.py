"""A venv holding only what the base wheel installs: this checkout's streamx (with its built
extension) and the installed copies of its required dependencies, linked in, nothing else.

No extra (pyarrow, matplotlib, pyyaml, torch) is visible in it unless a base dependency
pulls it in, which :func:`bare_venv` rules out by checking.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
EXTRAS_LEFT_OUT = ("pyarrow", "matplotlib", "yaml", "torch")


def _requirement_name(req: str) -> str:
    return re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0]


def _closure(roots: list[str]) -> list[str]:
    """The installed distributions ``roots`` require, transitively (extras left out)."""
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # a requirement for another platform or Python
        seen.append(key)
        todo += [_requirement_name(r) for r in requires if "extra ==" not in r]
    return seen


def bare_venv(dest: Path) -> Path:
    """Creates the venv under ``dest``; returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", dest], check=True)
    links = dest / "base-deps"
    links.mkdir()
    with (ROOT / "pyproject.toml").open("rb") as f:
        base = [_requirement_name(r) for r in tomllib.load(f)["project"]["dependencies"]]
    for name in _closure(base):
        dist = metadata.distribution(name)
        for top in {f.parts[0] for f in dist.files or [] if ".." not in f.parts}:
            target = Path(str(dist.locate_file(top)))
            if target.exists() and not (links / top).exists():
                (links / top).symlink_to(target)
    python = dest / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "streamx-bare.pth").write_text(f"{ROOT / 'python'}\n{links}\n")
    probe = "import importlib.util as u, sys; print([m for m in sys.argv[1:] if u.find_spec(m)])"
    seen = subprocess.run(
        [python, "-c", probe, *EXTRAS_LEFT_OUT], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert seen == "[]", f"the bare venv sees {seen}"
    return python
