"""`make demo` installs only what the main job needs, and no install step leaves a dependency
conflict: the demo's light path, `make install`'s full one, and the pins they share."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from release_env import ROOT, Artifacts, clean_env, expose_torch, make_venv, run

# What the demo must not set up: the browser, Java (Spark), the test and docs tools.
TEST_WORLD = ("chromium", "openjdk", "nginx", "requirements/test.txt", "test-gcs")


def make_commands(target: str) -> str:
    """The commands `make TARGET` would run in a fresh clone (-B: every target out of date)."""
    done = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout


def pins(path: Path) -> dict[str, str]:
    """Package name -> its ``==`` version in a requirements or constraints file."""
    text = path.read_text(encoding="utf-8")
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.MULTILINE))


def test_demo_installs_no_test_world() -> None:
    demo = make_commands("demo")
    assert "requirements/demo.txt" in demo and "requirements/constraints.txt" in demo
    assert "maturin develop" in demo and "python -m streamx.demo" in demo
    leaked = [word for word in TEST_WORLD if word in demo]
    assert not leaked, f"make demo sets up {leaked}"
    assert "--system-site-packages" not in demo


def test_install_adds_the_test_world_under_the_same_pins() -> None:
    install = make_commands("install")
    assert "requirements/demo.txt" in install, "make install builds on the demo's install"
    for needed in ("requirements/test.txt", "requirements/test-gcs.txt", "chromium", "nginx"):
        assert needed in install
    for line in install.splitlines():
        if "pip install" in line and "-r requirements/" in line:
            assert "-c requirements/constraints.txt" in line, line


def test_fsspec_family_is_pinned_to_one_release() -> None:
    pinned = pins(ROOT / "requirements" / "constraints.txt")
    assert pinned["fsspec"] == pinned["s3fs"] == pinned["gcsfs"]
    assert pinned["boto3"] == pinned["botocore"]
    demo = (ROOT / "requirements" / "demo.txt").read_text(encoding="utf-8")
    named = {re.split(r"[\s\[<>=]", line, maxsplit=1)[0] for line in demo.splitlines()}
    assert named - {"", "#"} <= {"maturin", "torch", "moto", "s3fs"}


@pytest.mark.release
def test_dev_venv_has_no_conflicts() -> None:
    """The venv `make install` built (this interpreter's) satisfies every requirement."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.release
@pytest.mark.timeout(900)
def test_demo_extra_installs_without_resolver_errors(artifacts: Artifacts, tmp_path: Path) -> None:
    """The wheel's ``demo`` extra under the shared pins, in a fresh venv (torch linked in)."""
    pytest.importorskip("torch", reason="the release check links the running venv's torch")
    venv = tmp_path / "venv"
    make_venv(Path(sys.executable), venv)
    expose_torch(venv)
    env = clean_env(venv)
    python = venv / "bin" / "python"
    constraints = ROOT / "requirements" / "constraints.txt"
    done = subprocess.run(
        [python, "-m", "pip", "install", "-c", constraints, f"{artifacts.x86_64}[demo]"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dependency resolver" not in done.stdout + done.stderr
    run([python, "-m", "pip", "check"], cwd=tmp_path, env=env, timeout=120)
