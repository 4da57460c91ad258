"""Helpers for the release checks: the artifacts in dist/, interpreters and fresh venvs."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
SMOKE = Path(__file__).with_name("smoke_installed.py")
# The CPython versions the abi3 wheel claims; each one found on this machine is tested.
CLAIMED_PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# Installing and smoke-testing in a fresh venv downloads the dependencies: allow for that.
INSTALL_TIMEOUT_S = 600
# The distribution name ("streamx" on PyPI is an unrelated project); the import name is streamx.
DIST_NAME = "streamx-data"
# Wheel and sdist file names spell it with an underscore (PEP 427, PEP 625).
FILE_NAME = DIST_NAME.replace("-", "_")


@dataclass(frozen=True)
class Artifacts:
    """The release artifacts of one `make wheels` run."""

    x86_64: Path
    aarch64: Path | None  # absent when only the x86_64 wheel was built (`make release-ci`)
    sdist: Path


def find_artifacts(dist: Path) -> Artifacts:
    """Finds exactly one wheel per architecture and one sdist in ``dist``."""

    def one(pattern: str) -> Path:
        found = sorted(dist.glob(pattern))
        assert len(found) == 1, f"expected one {pattern} in {dist}, found {found}"
        return found[0]

    arm = sorted(dist.glob(f"{FILE_NAME}-*-cp310-abi3-*aarch64*.whl"))
    return Artifacts(
        x86_64=one(f"{FILE_NAME}-*-cp310-abi3-*x86_64*.whl"),
        aarch64=one(f"{FILE_NAME}-*-cp310-abi3-*aarch64*.whl") if arm else None,
        sdist=one(f"{FILE_NAME}-*.tar.gz"),
    )


def aarch64_wheel(artifacts: Artifacts) -> Path:
    """The aarch64 wheel; its tests carry the ``aarch64`` marker, which `make release-ci` skips."""
    assert artifacts.aarch64, "no aarch64 wheel in dist/: build it with `make wheels`"
    return artifacts.aarch64


def project_version() -> str:
    """The one version number: the Cargo workspace's, which maturin and the extension read."""
    with (ROOT / "Cargo.toml").open("rb") as f:
        return str(tomllib.load(f)["workspace"]["package"]["version"])


def wheel_metadata(wheel: Path) -> str:
    """The text of the wheel's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return zf.read(name).decode()


def wheel_metadata_field(wheel: Path, field: str) -> list[str]:
    """Every value of ``field`` (``Name``, ``Version``, ``Provides-Extra``...) in METADATA."""
    return re.findall(rf"^{field}: (.+?)\s*$", wheel_metadata(wheel), re.MULTILINE)


def wheel_metadata_version(wheel: Path) -> str:
    """The ``Version:`` field of the wheel's METADATA."""
    (version,) = wheel_metadata_field(wheel, "Version")
    return version


def find_pythons() -> dict[str, Path]:
    """CPython interpreters here for each claimed version: pyenv's, then those on PATH."""
    found: dict[str, Path] = {}
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for version in CLAIMED_PYTHONS:
        candidates = sorted(glob.glob(f"{pyenv}/{version}.*/bin/python{version}"), reverse=True)
        candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
        for candidate in candidates:
            if Path(candidate).is_file() and os.access(candidate, os.X_OK):
                found[version] = Path(candidate)
                break
    return found


def clean_env(venv: Path | None = None) -> dict[str, str]:
    """The environment without anything that would put this checkout on ``sys.path``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("VIRTUAL_ENV", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def run(args: list[str | Path], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    """Runs a command; on failure the assertion carries its output."""
    proc = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def make_venv(python: Path, venv: Path) -> Path:
    """A fresh venv without system site-packages; returns its interpreter."""
    run([python, "-m", "venv", venv], cwd=venv.parent, env=clean_env(), timeout=120)
    return venv / "bin" / "python"


def pip_install(venv: Path, *requirements: str | Path) -> None:
    """``pip install`` into ``venv`` (the dependencies come from the package index)."""
    python = venv / "bin" / "python"
    run(
        [python, "-m", "pip", "install", "-q", *requirements],
        cwd=venv.parent,
        env=clean_env(venv),
        timeout=INSTALL_TIMEOUT_S,
    )


def smoke(venv: Path, *, workdir: Path, torch: bool) -> dict[str, object]:
    """Runs smoke_installed.py in ``venv`` from ``workdir``; returns what it reports."""
    args: list[str | Path] = [venv / "bin" / "python", SMOKE] + (["--torch"] if torch else [])
    out = run(args, cwd=workdir, env=clean_env(venv), timeout=INSTALL_TIMEOUT_S)
    report = json.loads(out.strip().splitlines()[-1])
    assert isinstance(report, dict)
    return report


def cli_versions(venv: Path, *, workdir: Path) -> list[str]:
    """What ``streamx --version`` and ``python -m streamx --version`` print in ``venv``."""
    env = clean_env(venv)
    return [
        run([venv / "bin" / "streamx", "--version"], cwd=workdir, env=env, timeout=120).strip(),
        run(
            [venv / "bin" / "python", "-m", "streamx", "--version"],
            cwd=workdir,
            env=env,
            timeout=120,
        ).strip(),
    ]


def expose_torch(venv: Path) -> list[str]:
    """Makes the running interpreter's torch, and only it with its dependencies, importable.

    torch is far too large to download per test, so the venv gets a folder of links to the
    installed torch distribution and its installed requirements, added by a ``.pth`` file.
    Nothing else of the running environment (streamx, mosaicml-streaming, numpy) becomes
    visible. Returns the distribution names linked.
    """
    links = venv / "torch-closure"
    links.mkdir()
    names = _closure("torch")
    for name in names:
        dist = metadata.distribution(name)
        for top in {f.parts[0] for f in dist.files or [] if ".." not in f.parts}:
            target = Path(str(dist.locate_file(top)))
            if target.exists() and not (links / top).exists():
                (links / top).symlink_to(target)
    site = run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        cwd=venv.parent,
        env=clean_env(venv),
        timeout=60,
    ).strip()
    Path(site, "torch-closure.pth").write_text(f"{links}\n")
    return names


def _closure(root: str) -> list[str]:
    """``root`` and the installed distributions it requires, transitively (extras left out)."""
    seen: list[str] = []
    todo = [root]
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # a requirement for another platform
        seen.append(key)
        for req in requires:
            if "extra ==" not in req:
                todo.append(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0])
    return seen


__all__ = [
    "CLAIMED_PYTHONS",
    "DIST_NAME",
    "FILE_NAME",
    "ROOT",
    "Artifacts",
    "clean_env",
    "cli_versions",
    "expose_torch",
    "find_artifacts",
    "find_pythons",
    "make_venv",
    "pip_install",
    "project_version",
    "run",
    "smoke",
    "wheel_metadata_field",
    "wheel_metadata_version",
]
