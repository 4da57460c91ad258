"""Every Python example in the README and in ``docs/`` runs, as written, and its asserts hold.

Each page's ``python`` code blocks run in order in one fresh interpreter (a page builds on its
earlier blocks), in an empty working directory, with the environment pointing S3 at the test
suite's moto server and a bucket named ``my-bucket`` there, which the examples use.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)


def python_blocks(page: Path) -> list[str]:
    """The page's ``python`` fenced blocks, in order."""
    return [textwrap.dedent(block) for block in _BLOCK.findall(page.read_text())]


PAGES_WITH_CODE = [page for page in PAGES if python_blocks(page)]


def _bucket(endpoint: str) -> None:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    if "my-bucket" not in [b["Name"] for b in client.list_buckets()["Buckets"]]:
        client.create_bucket(Bucket="my-bucket")


def test_pages_with_code_are_found() -> None:
    names = {page.relative_to(ROOT).as_posix() for page in PAGES_WITH_CODE}
    assert {"README.md", "docs/getting-started.md", "docs/migrating.md"} <= names


# The example's own limit is 240 s (engines.md starts Spark, Ray and Dask): pytest's
# default of 120 s would cut it short on a loaded machine.
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "page", PAGES_WITH_CODE, ids=[p.relative_to(ROOT).as_posix() for p in PAGES_WITH_CODE]
)
def test_page_examples_run(page: Path, tmp_path: Path, moto_endpoint: str) -> None:
    _bucket(moto_endpoint)
    short_tmp = tempfile.mkdtemp(prefix="sxd-", dir="/tmp")
    script = "\n\n".join(python_blocks(page))
    env = {
        **os.environ,
        "S3_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "HOME": str(tmp_path / "home"),
        # Short: Ray puts Unix sockets under it, whose paths may not exceed 107 bytes.
        "TMPDIR": short_tmp,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]),
        # As in an activated virtual environment: Spark's workers run `python3` from PATH.
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
        "PYSPARK_PYTHON": sys.executable,
    }
    env.pop("AWS_PROFILE", None)
    (tmp_path / "home").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "example.py").write_text(script)
    try:
        done = subprocess.run(
            [sys.executable, "example.py"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        shutil.rmtree(short_tmp, ignore_errors=True)
    assert done.returncode == 0, f"{page.name} examples failed:\n{done.stdout}\n{done.stderr}"
