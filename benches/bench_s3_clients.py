"""S3 clients side by side against moto on 127.0.0.1: streamx's hand-written signed requests
(`storage/s3_direct.py`, `storage/s3_put.py`), obstore, s3fs and boto3.

Measures, per client:
- first byte: a fresh interpreter imports the client, builds it and GETs one 1 KiB object
  (what a DataLoader worker pays before its first sample), median of `--repeat` runs;
- GET and PUT of `--objects` objects of `--size-mib` MiB over `--workers` threads: wall MB/s
  and the client's CPU seconds per GiB (moto runs in its own process, and on a loopback it
  is the bottleneck, so CPU/GiB is the figure that says what a client costs);
- fork: use the client in the parent, fork, GET in the child (with a timeout);
- credentials: which sources each client resolves with no code of ours (environment keys,
  a named profile in a credentials file, ``S3_ENDPOINT_URL``).

Run: ``python benches/bench_s3_clients.py [--objects 16 --size-mib 8 --workers 8]``.
Every transferred object is compared with what was stored (the ``correct`` column).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "bench"
CLIENTS = tuple(
    name
    for name in ("streamx", "obstore", "s3fs", "boto3")
    if name == "streamx" or importlib.util.find_spec(name) is not None
)

# What each client needs to GET one object in a fresh interpreter; the environment supplies
# the endpoint and keys exactly as a user's would.
FIRST_BYTE = {
    "streamx": (
        "from streamx.storage.download import download_file\n"
        "download_file('s3://bench/index.json', '{dest}')\n"
    ),
    "obstore": (
        "import os, obstore\nfrom obstore.store import S3Store\n"
        "store = S3Store('bench', endpoint=os.environ['S3_ENDPOINT_URL'],"
        " client_options={{'allow_http': True}})\n"
        "open('{dest}', 'wb').write(bytes(obstore.get(store, 'index.json').bytes()))\n"
    ),
    "s3fs": ("import s3fs\nfs = s3fs.S3FileSystem()\nfs.get_file('bench/index.json', '{dest}')\n"),
    "boto3": (
        "import os, boto3\n"
        "c = boto3.client('s3', endpoint_url=os.environ['S3_ENDPOINT_URL'])\n"
        "c.download_file('bench', 'index.json', '{dest}')\n"
    ),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    code = (
        "import time\nfrom moto.server import ThreadedMotoServer\n"
        f"ThreadedMotoServer(ip_address='127.0.0.1', port={port}, verbose=False).start()\n"
        "time.sleep(1e6)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).read()
            return proc, endpoint
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def set_env(endpoint: str) -> None:
    os.environ.update(
        S3_ENDPOINT_URL=endpoint,
        AWS_ENDPOINT_URL=endpoint,  # obstore reads this one, not S3_ENDPOINT_URL
        AWS_ALLOW_HTTP="true",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
    )


class Client:
    """One client's GET and PUT of a local file, built once and shared by threads."""

    def __init__(self, name: str, endpoint: str) -> None:
        self.name = name
        if name == "obstore":
            from obstore.store import S3Store

            self.store: Any = S3Store(
                BUCKET, endpoint=endpoint, client_options={"allow_http": True}
            )
        elif name == "s3fs":
            import s3fs

            self.fs: Any = s3fs.S3FileSystem(skip_instance_cache=True)
        elif name == "boto3":
            import boto3

            self.boto: Any = boto3.client("s3", endpoint_url=endpoint)

    def get(self, key: str, dest: str) -> None:
        if self.name == "streamx":
            from streamx.storage.download import download_file

            download_file(f"s3://{BUCKET}/{key}", dest)
        elif self.name == "obstore":
            import obstore

            with open(dest, "wb") as out:
                for chunk in obstore.get(self.store, key).stream(min_chunk_size=1 << 20):
                    out.write(chunk)
        elif self.name == "s3fs":
            self.fs.get_file(f"{BUCKET}/{key}", dest)
        else:
            self.boto.download_file(BUCKET, key, dest)

    def put(self, src: str, key: str) -> None:
        if self.name == "streamx":
            from streamx.storage.s3_put import put_file, put_route

            route = put_route(f"s3://{BUCKET}/{key}", os.path.getsize(src))
            assert route is not None, "the direct route must serve this configuration"
            put_file(route, src)
        elif self.name == "obstore":
            import obstore

            obstore.put(self.store, key, Path(src))
        elif self.name == "s3fs":
            self.fs.put_file(src, f"{BUCKET}/{key}")
        else:
            self.boto.upload_file(src, BUCKET, key)


def streamx_can_put() -> bool:
    try:
        from streamx.storage import s3_put  # noqa: F401
    except ImportError:
        return False
    return True


def first_byte(name: str, repeat: int, work: Path) -> float:
    times = []
    for i in range(repeat):
        dest = work / f"fb-{name}-{i}.json"
        code = FIRST_BYTE[name].format(dest=dest)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
        times.append(time.perf_counter() - start)
        assert dest.read_bytes() == b"{}" * 512
    return statistics.median(times)


def first_byte_after_import(repeat: int, work: Path) -> float:
    """streamx's first byte once ``import streamx`` is paid (a DataLoader worker inherits the
    import from its parent; the package import time is another benchmark's subject)."""
    times = []
    for i in range(repeat):
        dest = work / f"fb-after-{i}.json"
        code = (
            "import time, streamx\nt = time.perf_counter()\n"
            + FIRST_BYTE["streamx"].format(dest=dest)
            + "print(time.perf_counter() - t)\n"
        )
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        run = subprocess.run(
            [sys.executable, "-c", code],
            check=True,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        times.append(float(run.stdout.split()[-1]))
    return statistics.median(times)


def transfer(
    client: Client, keys: list[str], work: Path, blobs: dict[str, bytes], workers: int
) -> dict[str, Any]:
    """GET every key, then PUT every file back under a new key; check the bytes both ways."""
    total = sum(len(blobs[k]) for k in keys)
    rows: dict[str, Any] = {}
    dests = [str(work / f"{client.name}-{k}") for k in keys]
    rows["get"] = _timed(lambda: _each(workers, client.get, keys, dests), total)
    ok = all(Path(d).read_bytes() == blobs[k] for k, d in zip(keys, dests, strict=True))
    if client.name != "streamx" or streamx_can_put():
        put_keys = [f"put-{client.name}/{k}" for k in keys]
        rows["put"] = _timed(lambda: _each(workers, client.put, dests, put_keys), total)
        ok = ok and all(_moto_get(p) == blobs[k] for p, k in zip(put_keys, keys, strict=True))
    rows["correct"] = ok
    return rows


def _each(workers: int, fn: Callable[[str, str], None], a: list[str], b: list[str]) -> None:
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fn, a, b))


def _timed(fn: Callable[[], None], total: int) -> dict[str, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"MB/s": total / wall / 1e6, "cpu_s_per_GiB": cpu / (total / 2**30)}


def _moto_get(key: str) -> bytes:
    import boto3

    body: bytes = (
        boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
        .get_object(Bucket=BUCKET, Key=key)["Body"]
        .read()
    )
    return body


def _fork_child(name: str, fresh: bool, endpoint: str, dest: str, queue: Any) -> None:
    try:
        client = Client(name, endpoint) if fresh else CLIENT_IN_PARENT[name]
        client.get("index.json", dest)
        queue.put("ok" if Path(dest).read_bytes() == b"{}" * 512 else "wrong bytes")
    except BaseException as err:
        queue.put(f"{type(err).__name__}: {err}"[:120])


CLIENT_IN_PARENT: dict[str, Client] = {}
INHERITED = "fork: parent's client"


def fork_safety(name: str, endpoint: str, work: Path, *, fresh: bool) -> str:
    """After the parent used the client, a forked child (what DataLoader workers are) GETs
    with the parent's client object, or with a new one when `fresh`."""
    client = CLIENT_IN_PARENT[name] = Client(name, endpoint)
    client.get("index.json", str(work / f"parent-{name}.json"))
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    dest = str(work / f"child-{name}-{fresh}")
    child = ctx.Process(target=_fork_child, args=(name, fresh, endpoint, dest, queue))
    child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        child.join()
        return "hang (killed after 30 s)"
    return str(queue.get(timeout=5)) if not queue.empty() else f"exit {child.exitcode}"


def fork_check(name: str, endpoint: str, work: Path, *, fresh: bool) -> str:
    """:func:`fork_safety` in a fresh interpreter, so that a parent that hangs is seen."""
    command = [sys.executable, __file__, "--fork-check", name, str(fresh), endpoint, str(work)]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    try:
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        return "parent hangs after the fork"
    return run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-100:]


PROFILE = "[bench]\naws_access_key_id = testing\naws_secret_access_key = testing\n"


def credential_sources(endpoint: str, work: Path) -> dict[str, dict[str, str]]:
    """Which sources a client resolves by itself, each tried in a fresh interpreter."""
    (work / "credentials").write_text(PROFILE)
    (work / "config").write_text("[profile bench]\nregion = us-east-1\n")
    keyless = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID",
               "AWS_SECRET_ACCESS_KEY")}  # fmt: skip
    cases = {
        "env keys + S3_ENDPOINT_URL only": {
            **{k: v for k, v in os.environ.items() if k not in ("AWS_ENDPOINT_URL",)}
        },
        "named profile (AWS_PROFILE)": {
            **keyless,
            "AWS_PROFILE": "bench",
            "AWS_SHARED_CREDENTIALS_FILE": str(work / "credentials"),
            "AWS_CONFIG_FILE": str(work / "config"),
        },
    }
    found: dict[str, dict[str, str]] = {}
    for case, env in cases.items():
        found[case] = {}
        for name in CLIENTS:
            dest = work / f"cred-{name}.json"
            dest.unlink(missing_ok=True)
            code = FIRST_BYTE[name].format(dest=dest)
            if name == "obstore" and "AWS_ENDPOINT_URL" not in env:
                code = code.replace("endpoint=os.environ['S3_ENDPOINT_URL'], ", "")
            run = subprocess.run(
                [sys.executable, "-c", code],
                env=dict(env, PYTHONPATH=str(ROOT / "python")),
                capture_output=True,
                text=True,
                timeout=60,
            )
            errors = [ln for ln in run.stderr.splitlines() if "Error" in ln or "error" in ln]
            last = (errors or ["?"])[-1].strip()[:100]
            found[case][name] = "yes" if run.returncode == 0 else f"no ({last})"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=16)
    parser.add_argument("--size-mib", type=int, default=8)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="4 objects of 4 MiB, 1 repeat")
    parser.add_argument("--fork-check", nargs=4, metavar=("CLIENT", "FRESH", "URL", "DIR"))
    args = parser.parse_args()
    if args.fork_check:
        name, fresh, endpoint, work = args.fork_check
        print(fork_safety(name, endpoint, Path(work), fresh=fresh == "True"), flush=True)
        os._exit(0)  # a hung client thread must not keep this process alive
    if args.quick:
        args.objects, args.size_mib, args.repeat = 4, 4, 1
    proc, endpoint = start_moto()
    try:
        set_env(endpoint)
        import boto3

        setup = boto3.client("s3", endpoint_url=endpoint)
        setup.create_bucket(Bucket=BUCKET)
        setup.put_object(Bucket=BUCKET, Key="index.json", Body=b"{}" * 512)
        blobs = {f"shard.{i:05}.mds": os.urandom(args.size_mib << 20) for i in range(args.objects)}
        for key, blob in blobs.items():
            setup.put_object(Bucket=BUCKET, Key=key, Body=blob)
        results: dict[str, Any] = {"args": vars(args)}
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for name in CLIENTS:
                row: dict[str, Any] = {"first_byte_s": first_byte(name, args.repeat, work)}
                if name == "streamx":
                    row["first_byte_after_import_s"] = first_byte_after_import(args.repeat, work)
                client = Client(name, endpoint)
                client.get("index.json", str(work / "warm.json"))  # imports, lazy set-up
                row |= transfer(client, list(blobs), work, blobs, args.workers)
                row[INHERITED] = fork_check(name, endpoint, work, fresh=False)
                row["fork: new client"] = fork_check(name, endpoint, work, fresh=True)
                results[name] = row
                print(name, json.dumps(row), flush=True)
            results["credentials"] = credential_sources(endpoint, work)
        print(json.dumps(results["credentials"], indent=1))
        out = ROOT / "benches" / "results"
        out.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        (out / f"s3-clients-{stamp}.json").write_text(json.dumps(results, indent=1))
        _table(results)
    finally:
        proc.kill()
        proc.wait()


def _table(results: dict[str, Any]) -> None:
    print("| client | first byte (s) | GET MB/s | GET CPU s/GiB | PUT MB/s | PUT CPU s/GiB "
          "| fork: parent's client | fork: new client | correct |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---|---|---|")
    for name in CLIENTS:
        r = results[name]
        put = r.get("put", {"MB/s": float("nan"), "cpu_s_per_GiB": float("nan")})
        print(
            f"| {name} | {r['first_byte_s']:.3f} | {r['get']['MB/s']:.0f} | "
            f"{r['get']['cpu_s_per_GiB']:.2f} | {put['MB/s']:.0f} | {put['cpu_s_per_GiB']:.2f} "
            f"| {r[INHERITED]} | {r['fork: new client']} | {r['correct']} |"
        )


if __name__ == "__main__":
    main()
