"""``streamx verify``: every file's size and hashes against the index, and every sample decoded.

Shards are checked in parallel threads (hashing, decompression and decoding run in Rust with
the GIL released). Remote shards are fetched into a scratch directory one at a time per
thread and dropped once checked, so a dataset larger than the local disk can be verified.
A shard that cannot be fetched or read is reported like any other bad shard: every shard is
checked, and the report (``--json`` too) is always printed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import typer
from rich.markup import escape

from streamx import _core
from streamx.cli.errors import one_line_errors
from streamx.cli.in_place import check_format, in_place_problems
from streamx.cli.location import Location
from streamx.cli.output import console, count_progress, print_json
from streamx.format.in_place import Kind, in_place_kind
from streamx.format.index import FileInfo, ShardInfo
from streamx.format.readers import make_reader

__all__ = ["Problem", "file_problems", "verify"]

_MAX_SAMPLE_PROBLEMS = 20


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a shard: ``sample`` is its index within the shard, if any."""

    split: str
    shard: str
    problem: str
    sample: int | None = None


@dataclass(frozen=True)
class _Checked:
    """What a run checked, as its report gives it."""

    shards: int
    samples: int
    quick: bool
    hashed: bool
    done: str  # the summary's opening: "checked sizes of 4 shards", "read the metadata of ..."
    bad: str  # the noun after the count of bad shards

    def summary(self) -> str:
        if self.quick:
            return f"{self.done} ({self.samples:,} samples)"
        return f"{self.done} and decoded all {self.samples:,} samples"


def file_problems(info: FileInfo, path: str) -> list[str]:
    """What is wrong with the file at ``path`` against its index entry (empty: nothing)."""
    if not os.path.exists(path):
        return [f"{info.basename}: missing"]
    size = os.path.getsize(path)
    if size != info.bytes:
        return [f"{info.basename}: {size} bytes, the index says {info.bytes}"]
    out = []
    for algo, digest in sorted(info.hashes.items()):
        got = _core.hash_file(algo, path)
        if got != digest:
            out.append(f"{info.basename}: {algo} is {got}, the index says {digest}")
    return out


def _check_files(shard: ShardInfo, scratch: str) -> list[str]:
    """Sizes and hashes of every file present, and of the raw form of a compressed file
    found alone (decompressed into ``scratch`` for the check)."""
    problems: list[str] = []
    for raw, packed in shard.file_pairs:
        raw_path = shard.local_path(raw)
        packed_path = shard.local_path(packed) if packed is not None else None
        if packed is not None and packed_path is not None and os.path.exists(packed_path):
            found = file_problems(packed, packed_path)
            problems += found
            if not os.path.exists(raw_path):
                if not found and shard.compression is not None:
                    problems += _unpacked_problems(shard.compression, raw, packed_path, scratch)
                continue
        if packed is not None and not os.path.exists(raw_path):
            problems.append(f"{packed.basename}: missing")
            continue
        problems += file_problems(raw, raw_path)
    return problems


def _unpacked_problems(
    compression: str, raw: FileInfo, packed_path: str, scratch: str
) -> list[str]:
    path = os.path.join(scratch, os.path.basename(raw.basename))
    try:
        _core.decompress_file(compression, packed_path, path)
    except Exception as err:
        return [f"{os.path.basename(packed_path)}: cannot decompress: {err}"]
    try:
        return file_problems(raw, path)
    finally:
        os.remove(path)


def _reason(err: BaseException, scratch: str) -> str:
    """One line; a file in the scratch directory is named by its basename (the path is gone
    by the time anyone reads it)."""
    text = " ".join(str(err).split()).replace(scratch.rstrip(os.sep) + os.sep, "")
    return f"{type(err).__name__}: {text}"


def _sample_problem(shard: ShardInfo, scratch: str) -> tuple[int | None, str] | None:
    """Decodes every sample; one summary of the failures (None when all decode): the first
    bad sample, how many there are, and why (once, when all fail alike)."""
    try:
        reader = make_reader([shard])
    except Exception as err:
        return None, f"cannot open: {_reason(err, scratch)}"
    bad: list[int] = []
    reasons: set[str] = set()
    first = ""
    for i in range(shard.samples):
        try:
            reader.get(i)
        except Exception as err:
            bad.append(i)
            reason = _reason(err, scratch)
            first = first or reason
            if len(reasons) <= _MAX_SAMPLE_PROBLEMS:
                reasons.add(reason)
    if not bad:
        return None
    if len(bad) == shard.samples:
        what = f"none of its {shard.samples} samples decodes"
    else:
        more = "..." if len(bad) > _MAX_SAMPLE_PROBLEMS else ""
        shown = ", ".join(map(str, bad[:_MAX_SAMPLE_PROBLEMS])) + more
        what = f"{len(bad)} of {shard.samples} samples do not decode ({shown})"
    why = first if len(reasons) == 1 else f"sample {bad[0]}: {first}"
    return bad[0], f"{what}: {why}"


def _verify_shard(location: Location, split: str, shard: ShardInfo, quick: bool) -> list[Problem]:
    name = shard.raw_data.basename
    scratch = tempfile.mkdtemp(prefix="streamx-verify-")
    try:
        try:
            location.fetch(shard)
        except FileNotFoundError as err:
            return [Problem(split, name, f"missing: {err}")]
        except Exception as err:  # a truncated or unreadable remote copy: the next shard
            return [Problem(split, name, f"cannot fetch: {_reason(err, scratch)}")]
        problems = [Problem(split, name, p) for p in _check_files(shard, scratch)]
        if quick or any(p.problem.endswith(": missing") for p in problems):
            return problems
        try:
            found = _sample_problem(location.readable(shard, scratch), scratch)
        except Exception as err:
            found = None, f"cannot read: {_reason(err, scratch)}"
        if found is not None:
            problems.append(Problem(split, name, found[1], found[0]))
        return problems
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if location.remote:
            for pair in shard.file_pairs:
                for info in pair:
                    if info is not None:
                        with contextlib.suppress(FileNotFoundError):
                            os.remove(shard.local_path(info))


def _report(target: str, problems: list[Problem], checked: _Checked, as_json: bool) -> None:
    """Prints the JSON report, or one line per bad shard (its problems joined, in the order
    found) and a verdict; exits 1 if anything is bad."""
    bad = list(dict.fromkeys((p.split, p.shard) for p in problems))
    if as_json:
        print_json(
            {
                "target": target,
                "ok": not problems,
                "shards": checked.shards,
                "samples": checked.samples,
                "decoded": not checked.quick,
                "hashes_checked": checked.hashed,
                "bad_shards": len(bad),
                "problems": [asdict(p) for p in problems],
            }
        )
    else:
        for split, shard in bad:
            where = f"{split}/{shard}" if split else shard
            what = "; ".join(p.problem for p in problems if (p.split, p.shard) == (split, shard))
            console.print(f"[red]BAD[/red] {escape(where)}: {escape(what)}", soft_wrap=True)
        verdict = "[green]OK[/green]" if not problems else f"[red]{len(bad)} {checked.bad}[/red]"
        console.print(f"{verdict}: {checked.summary()} in {escape(target)}")
    if problems:
        raise typer.Exit(1)


def _verify_in_place(target: str, kind: Kind, scratch: str, quick: bool, as_json: bool) -> None:
    shards, samples, found = in_place_problems(target, kind, scratch, quick)
    problems = [Problem("", shard, problem, sample) for shard, sample, problem in found]
    unit = {"parquet": "row groups", "wds": "tars", "litdata": "chunks"}[kind]
    done = f"read the metadata of {shards} {unit}"
    _report(target, problems, _Checked(shards, samples, quick, False, done, "bad"), as_json)


@one_line_errors
def verify(
    target: str = typer.Argument(..., metavar="PATH|URL", help="Dataset directory or URL."),
    quick: bool = typer.Option(
        False, "--quick", help="Check sizes and hashes only; skip decoding samples."
    ),
    workers: int = typer.Option(
        min(8, (os.cpu_count() or 1) * 2),
        "--workers",
        "-j",
        min=1,
        metavar="N",
        help="Shards checked at once.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON report."),
    source_format: str = typer.Option(
        "auto",
        "--format",
        help="auto, mds, parquet, wds (WebDataset tars) or litdata, as for inspect.",
    ),
) -> None:
    """Check every shard's size and hashes and decode every sample; exit 1 if anything is bad."""
    check_format(source_format)
    scratch = tempfile.mkdtemp(prefix="streamx-verify-")
    try:
        kind = in_place_kind(target, source_format)
        if kind is not None:
            _verify_in_place(target, kind, scratch, quick, as_json)
            return
        location = Location(target, scratch)
        splits = location.splits()
        jobs = [(s.name, shard) for s in splits for shard in s.shards]
        problems: list[Problem] = []
        with count_progress(as_json) as progress, ThreadPoolExecutor(workers) as pool:
            task = progress.add_task("verifying shards", total=len(jobs))
            futures = [pool.submit(_verify_shard, location, n, shard, quick) for n, shard in jobs]
            for future in futures:
                problems += future.result()
                progress.advance(task)
        samples = sum(shard.samples for _, shard in jobs)
        files = [f for _, shard in jobs for pair in shard.file_pairs for f in pair if f]
        hashed = any(f.hashes for f in files)  # say "hashes" only where there were some
        what = "sizes and hashes" if hashed else "sizes (the index lists no hashes)"
        done = f"checked {what} of {len(jobs)} shards"
        checked = _Checked(len(jobs), samples, quick, hashed, done, "bad shard(s)")
        _report(target, problems, checked, as_json)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
