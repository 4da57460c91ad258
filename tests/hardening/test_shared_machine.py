"""Another local user on the same machine: planted directories, unsafe cache directories,
a shared read-only mirror, and two datasets pointed at one cache directory."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import stat
import tempfile
import textwrap
from pathlib import Path

import pytest
import remote_data
from hardening_support import NOBODY, N, run_as

import streamx
from streamx.exceptions import UnsafeCacheDirError


def test_default_local_is_private_and_ignores_a_planted_directory(
    remote: str, tmp_path: Path
) -> None:
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    shared_tmp.chmod(0o1777)
    # Another user creates the directory mosaicml-streaming would use, with a planted index.
    digest = hashlib.blake2s(remote.encode(), digest_size=16).hexdigest()
    planted = shared_tmp / digest
    done = run_as(
        NOBODY,
        f"import os; os.makedirs({str(planted)!r}); "
        f"open(os.path.join({str(planted)!r}, 'index.json'), 'w').write('{{\"shards\": []}}')",
    )
    assert done.returncode == 0, done.stderr
    code = textwrap.dedent(
        f"""
        import os, sys, tempfile
        sys.path.insert(0, {os.path.dirname(remote_data.__file__)!r})
        import remote_data, streamx
        ds = streamx.StreamingDataset(remote={remote!r}, batch_size=4)
        assert sorted(remote_data.check(s) for s in ds) == list(range({N}))
        local = ds.streams[0].local
        root = os.path.join(tempfile.gettempdir(), f"streamx-{{os.getuid()}}")
        assert local.startswith(root + os.sep), local
        info = os.lstat(root)
        assert info.st_uid == os.getuid() and oct(info.st_mode & 0o777) == "0o700"
        print("ok")
        """
    )
    done = run_as(0, code, {"TMPDIR": str(shared_tmp)})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert os.listdir(planted) == ["index.json"]  # untouched, and never read


@pytest.mark.slow
def test_a_planted_user_root_is_not_used(remote: str, tmp_path: Path) -> None:
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    shared_tmp.chmod(0o1777)
    # uid 65534 plants the per-user root of uid 0 before it exists.
    done = run_as(NOBODY, f"import os; os.mkdir({str(shared_tmp / 'streamx-0')!r}, 0o777)")
    assert done.returncode == 0, done.stderr
    code = textwrap.dedent(
        f"""
        import os, sys, warnings
        sys.path.insert(0, {os.path.dirname(remote_data.__file__)!r})
        import remote_data, streamx
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds = streamx.StreamingDataset(remote={remote!r}, batch_size=4)
            assert sorted(remote_data.check(s) for s in ds) == list(range({N}))
        assert any("not a private directory" in str(w.message) for w in caught)
        assert "streamx-0/" not in ds.streams[0].local, ds.streams[0].local
        print("ok")
        """
    )
    done = run_as(0, code, {"TMPDIR": str(shared_tmp)})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert os.listdir(shared_tmp / "streamx-0") == []


def test_a_world_writable_cache_dir_is_refused(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    local.mkdir()
    local.chmod(0o777)
    with pytest.raises(UnsafeCacheDirError, match="writable by every user"):
        streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert os.listdir(local) == []
    local.chmod(0o1777)  # sticky, like /tmp: others cannot replace our files
    ds = streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)
    assert remote_data.check(ds[3]) == 3


def test_a_cache_dir_owned_by_another_user_is_refused(remote: str, tmp_path: Path) -> None:
    local = tmp_path / "cache"
    local.mkdir()
    os.chown(local, NOBODY, NOBODY)
    with pytest.raises(UnsafeCacheDirError, match="owned by uid 65534"):
        streamx.StreamingDataset(remote=remote, local=str(local), batch_size=4)


def test_another_dataset_may_not_reuse_a_cache(remote: str, tmp_path: Path) -> None:
    other = str(tmp_path / "other")
    remote_data.write(other, 10, compression=None, first=1000)
    local = str(tmp_path / "cache")
    first = streamx.StreamingDataset(remote=remote, local=local, batch_size=4)
    assert remote_data.check(first[0]) == 0
    del first
    gc.collect()
    # The first job is gone: no live claim, but the cache still holds its index and shards.
    with pytest.raises(ValueError, match="Reused local directory.*holds a cache of"):
        streamx.StreamingDataset(remote=other, local=local, batch_size=4)
    again = streamx.StreamingDataset(remote=remote, local=local, batch_size=4)
    assert remote_data.check(again[5]) == 5


def test_a_read_only_complete_mirror_is_read_with_a_warning(remote: str, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    ds = streamx.StreamingDataset(remote=remote, local=str(mirror), batch_size=4)
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))
    del ds
    gc.collect()
    shutil.rmtree(mirror / ".streamx")
    for path in [mirror, *mirror.iterdir()]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    tmp_path.chmod(0o755)
    Path(remote).chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    code = textwrap.dedent(
        f"""
        import sys, warnings
        sys.path.insert(0, {os.path.dirname(remote_data.__file__)!r})
        import remote_data, streamx
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds = streamx.StreamingDataset(remote={remote!r}, local={str(mirror)!r}, batch_size=4)
            assert sorted(remote_data.check(s) for s in ds) == list(range({N}))
        assert any("read-only" in str(w.message) for w in caught), [str(w.message) for w in caught]
        print("ok")
        """
    )
    done = run_as(NOBODY, code, {"TMPDIR": str(home), "HOME": str(home)})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert not (mirror / ".streamx").exists()


def test_a_mirror_another_user_owns_is_refused_unless_trusted(remote: str, tmp_path: Path) -> None:
    """A complete dataset in a ``local`` another user made first (0755): its owner decides
    what is read, so it is refused, naming the owner, unless the user trusts that owner."""
    owner = 12345
    mirror = tmp_path / "mirror"
    ds = streamx.StreamingDataset(remote=remote, local=str(mirror), batch_size=4)
    assert sorted(remote_data.check(s) for s in ds) == list(range(N))
    del ds
    gc.collect()
    shutil.rmtree(mirror / ".streamx")
    for path in [mirror, *mirror.iterdir()]:
        os.chown(path, owner, owner)
        path.chmod(0o755 if path.is_dir() else 0o644)
    tmp_path.chmod(0o755)
    Path(remote).chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    code = textwrap.dedent(
        f"""
        import sys, warnings
        sys.path.insert(0, {os.path.dirname(remote_data.__file__)!r})
        import remote_data, streamx
        from streamx.exceptions import UnsafeCacheDirError
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                ds = streamx.StreamingDataset(
                    remote={remote!r}, local={str(mirror)!r}, batch_size=4
                )
                assert sorted(remote_data.check(s) for s in ds) == list(range({N}))
        except UnsafeCacheDirError as err:
            print("refused:", err)
        else:
            assert any("read-only" in str(w.message) for w in caught)
            print("read")
        """
    )
    env = {"TMPDIR": str(home), "HOME": str(home)}
    done = run_as(NOBODY, code, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused:"), done.stdout
    assert f"uid {owner}" in done.stdout and "STREAMX_TRUSTED_CACHE_OWNERS" in done.stdout
    done = run_as(NOBODY, code, {**env, "STREAMX_TRUSTED_CACHE_OWNERS": f"root,{owner}"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "read"
    assert not (mirror / ".streamx").exists()


@pytest.mark.slow
def test_a_read_only_incomplete_mirror_names_what_is_missing(remote: str, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    shutil.copy(os.path.join(remote, "index.json"), mirror / "index.json")
    for path in (tmp_path, mirror, Path(remote)):
        path.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    code = textwrap.dedent(
        f"""
        import streamx
        try:
            streamx.StreamingDataset(remote={remote!r}, local={str(mirror)!r}, batch_size=4)
        except PermissionError as err:
            print(err)
        """
    )
    done = run_as(NOBODY, code, {"TMPDIR": str(home), "HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert "is read-only and lacks" in done.stdout and "shard.00000" in done.stdout
    assert json.loads((mirror / "index.json").read_text())["shards"]
    assert stat.S_IMODE(os.stat(mirror).st_mode) == 0o755
    assert tempfile.gettempdir()
