"""The wheels install on glibc 2.17 (manylinux2014): by their tags, auditwheel and ELF symbols."""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from release_env import (
    DIST_NAME,
    FILE_NAME,
    Artifacts,
    aarch64_wheel,
    project_version,
    wheel_metadata_field,
    wheel_metadata_version,
)

pytestmark = pytest.mark.release

# The oldest glibc the wheels promise (manylinux2014 = manylinux_2_17).
GLIBC_FLOOR = (2, 17)
# The aarch64 wheel is built by `make wheels` but not by CI's lean `make release-ci`.
ARCHES = ["x86_64", pytest.param("aarch64", marks=pytest.mark.aarch64)]
ELF_MACHINE = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}


def wheel_of(artifacts: Artifacts, arch: str) -> Path:
    return artifacts.x86_64 if arch == "x86_64" else aarch64_wheel(artifacts)


def extension(wheel: Path, dest: Path) -> Path:
    """Unpacks the wheel's one native library and returns it."""
    with zipfile.ZipFile(wheel) as zf:
        native = [n for n in zf.namelist() if n.endswith(".so") or ".so." in n]
        assert native == ["streamx/_core.abi3.so"], f"{wheel.name} ships {native}"
        return Path(zf.extract(native[0], dest))


def readelf(*args: str | Path) -> str:
    tool = shutil.which("readelf")
    assert tool, "readelf (binutils) is needed to read the symbol versions"
    return subprocess.run(
        [tool, *map(str, args)], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("arch", ARCHES)
def test_wheel_name_and_metadata(artifacts: Artifacts, arch: str) -> None:
    wheel = wheel_of(artifacts, arch)
    version = project_version()
    name, wheel_version, python, abi, platforms = wheel.name.removesuffix(".whl").split("-")
    assert (name, wheel_version, python, abi) == (FILE_NAME, version, "cp310", "abi3")
    assert set(platforms.split(".")) == {f"manylinux2014_{arch}", f"manylinux_2_17_{arch}"}
    assert wheel_metadata_version(wheel) == version
    assert wheel_metadata_field(wheel, "Name") == [DIST_NAME]


@pytest.mark.parametrize("arch", ARCHES)
def test_auditwheel_manylinux2014(artifacts: Artifacts, arch: str) -> None:
    tool = shutil.which("auditwheel")
    assert tool, "auditwheel is needed: it is in requirements/release.txt"
    wheel = wheel_of(artifacts, arch)
    proc = subprocess.run([tool, "show", wheel], capture_output=True, text=True, check=True)
    text = " ".join(proc.stdout.split())
    assert f'consistent with the following platform tag: "manylinux_2_17_{arch}"' in text, text


@pytest.mark.parametrize("arch", ARCHES)
def test_extension_needs_glibc_217_at_most(artifacts: Artifacts, arch: str, tmp_path: Path) -> None:
    so = extension(wheel_of(artifacts, arch), tmp_path)
    assert f"Machine: {ELF_MACHINE[arch]}" in " ".join(readelf("-h", so).split())
    needed = readelf("--version-info", "--wide", so)
    versions = {tuple(map(int, v.split("."))) for v in re.findall(r"Name: GLIBC_([0-9.]+)", needed)}
    assert versions, f"no GLIBC symbol versions found in {so}:\n{needed}"
    assert max(versions) <= GLIBC_FLOOR, f"{arch}: needs GLIBC_{max(versions)}:\n{needed}"
    libs = set(re.findall(r"Shared library: \[([^\]]+)\]", readelf("--dynamic", so)))
    # Only the base system libraries that every manylinux platform has; libpython is not linked.
    assert libs <= {
        "libc.so.6",
        "libm.so.6",
        "libpthread.so.0",
        "libdl.so.2",
        "libgcc_s.so.1",
        "librt.so.1",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
    }, libs
