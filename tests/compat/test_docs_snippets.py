"""mosaicml-streaming's documentation snippets (docs/source of mosaicml/streaming), run on one
machine after ``s/streaming/streamx/`` alone, with mosaicml-streaming 0.13.0 as the oracle.

Each snippet is the documentation's code block as written. The only changes are the module
rename (for streamx) and the replacement of the placeholder paths (``s3://...``, ``/tmp/...``)
by directories of small datasets the test writes first; relative paths resolve inside the
test's temporary directory. Both libraries run every snippet; a snippet must behave the same
in both (the same exception type if the documentation's code is itself broken), and where
it finishes, the values its variables hold are compared too.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streaming")
pytest.importorskip("torch")

import docs_snippet_texts as texts

import streamx

pytestmark = pytest.mark.compat

Probe = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Snippet:
    """A documentation code block, where it comes from, and what to compare after it runs."""

    source: str  # docs/source/... file in mosaicml/streaming
    code: str
    paths: dict[str, str] = field(default_factory=dict)  # placeholder -> {dir} template
    probe: Probe | None = None  # comparable facts drawn from the snippet's variables
    doctest: bool = False  # a ``>>>`` transcript


def _order(name: str, key: str = "x") -> Probe:
    def probe(ns: dict[str, Any]) -> Any:
        ds = ns[name]
        return {"epoch_size": int(ds.epoch_size), "order": [int(s[key]) for s in ds]}

    return probe


# The placeholders of the mixing page's blocks.
MIX_PATHS = {
    "s3://stream_A_remote": "{A}",
    "s3://stream_B_remote": "{B}",
    "/tmp/stream_A": "{cache}/A",
    "/tmp/stream_B": "{cache}/B",
}


def _resumed(ns: dict[str, Any]) -> Any:
    return [int(x) for x in ns["batch"]["x"]], ns["state_dict"]["sample_in_epoch"]


def _ids(ns: dict[str, Any]) -> Any:
    return [tuple(int(v) for v in t) for t in ns["stream_shard_sample_ids"]]


def _sum_x(ns: dict[str, Any]) -> Any:
    return sorted(int(b["x"]) for b in ns["dataset"])


def _choose_probe(ns: dict[str, Any]) -> Any:
    lib = ns["_lib"]
    ds = lib.StreamingDataset(streams=[ns["stream_A"]], batch_size=10)
    return int(ds.epoch_size), sorted(int(s["x"]) for s in ds)


def _complex_probe(ns: dict[str, Any]) -> Any:
    lib = ns["_lib"]
    out = os.path.join(ns["_tmp"], "complex")
    with lib.MDSWriter(out=out, columns={"z": "complex128"}) as writer:
        for i in range(4):
            writer.write({"z": complex(i, 2 * i)})
    ds = lib.StreamingDataset(local=out, batch_size=1)
    values = [complex(ds[i]["z"]) for i in range(4)]
    del ns["_encodings"]["complex128"]  # leave the shared table as it was
    return values


def _loader_probe(ns: dict[str, Any]) -> Any:
    return sorted(int(x) for batch in ns["dataloader"] for x in batch["x"])


def _guide_probe(ns: dict[str, Any]) -> Any:
    return sorted(int(x) for batch in ns["dataloader"] for x in batch[0])


SNIPPETS: dict[str, Snippet] = {
    "quick_start_write": Snippet("getting_started/quick_start.md", texts.QUICK_START_WRITE),
    "quick_start_read": Snippet(
        "getting_started/quick_start.md",
        texts.QUICK_START_READ,
        {"s3://datapath": "{data}"},
        _loader_probe,
    ),
    "conversion_custom_encoding": Snippet(
        "preparing_datasets/basic_dataset_conversion.md",
        texts.CONVERSION_CUSTOM_ENCODING,
        probe=_complex_probe,
    ),
    "conversion_classification": Snippet(
        "preparing_datasets/basic_dataset_conversion.md", texts.CONVERSION_CLASSIFICATION
    ),
    "conversion_ndarray": Snippet(
        "preparing_datasets/basic_dataset_conversion.md",
        texts.NDARRAY_DYNAMIC + texts.NDARRAY_FIXED_DTYPE + texts.NDARRAY_FIXED_SHAPE,
    ),
    "user_guide": Snippet(
        "getting_started/user_guide.md",
        texts.USER_GUIDE,
        {"/tmp/cache": "{cache}", "s3://mybucket/myfolder": "{data}"},
        _guide_probe,
    ),
    "concepts_streams": Snippet(
        "getting_started/main_concepts.md",
        texts.IMPORTS + texts.CONCEPTS_STREAMS,
        {
            "s3://stream_1/directory": "{A}",
            "s3://stream_2/directory": "{B}",
            "/local/cache/stream_1": "{cache}/1",
            "/local/cache/stream_2": "{cache}/2",
        },
        _order("dataset"),
    ),
    "concepts_single_stream": Snippet(
        "getting_started/main_concepts.md",
        texts.IMPORTS + texts.CONCEPTS_SINGLE,
        {"s3://some/path": "{data}", "/local/path": "{cache}"},
        _order("dataset"),
    ),
    "mixing_proportion": Snippet(
        "dataset_configuration/mixing_data_sources.md",
        texts.IMPORTS + texts.MIX_PROPORTION,
        MIX_PATHS,
        _order("dataset"),
    ),
    # The epoch_size block reuses the streams of the block before it.
    "mixing_epoch_size": Snippet(
        "dataset_configuration/mixing_data_sources.md",
        texts.IMPORTS + texts.MIX_STREAMS + texts.MIX_EPOCH_SIZE,
        MIX_PATHS,
        _order("dataset"),
    ),
    # Both blocks in one session: the first dataset fixes the streams' weights, so the
    # second refuses them (mosaicml-streaming raises; so must streamx).
    "mixing_both_blocks": Snippet(
        "dataset_configuration/mixing_data_sources.md",
        texts.IMPORTS + texts.MIX_PROPORTION + texts.MIX_EPOCH_SIZE,
        MIX_PATHS,
        _order("dataset"),
    ),
    "mixing_repeat": Snippet(
        "dataset_configuration/mixing_data_sources.md",
        texts.IMPORTS + texts.MIX_REPEAT,
        MIX_PATHS,
        _choose_probe,
    ),
    "mixing_choose": Snippet(
        "dataset_configuration/mixing_data_sources.md",
        texts.IMPORTS + texts.MIX_CHOOSE,
        MIX_PATHS,
        _choose_probe,
    ),
    "fast_resumption": Snippet(
        "distributed_training/fast_resumption.md",
        texts.RESUMPTION,
        {"/tmp/cache": "{cache}", "s3://remote/dataset": "{data}", "'path'": "'{data}'"},
        _resumed,
    ),
    "faq_clean_shared_memory": Snippet(
        "getting_started/faqs_and_tips.md", texts.FAQ_CLEAN_SHM, doctest=True
    ),
    # The ``...`` placeholders stand for "your arguments"; they become a local dataset.
    "faq_spanner": Snippet(
        "getting_started/faqs_and_tips.md",
        texts.IMPORTS + texts.FAQ_SPANNER,
        {"    ...\n": "    local='{data}', batch_size=2,\n"},
        _ids,
    ),
    "main_concepts_shuffle": Snippet(
        "getting_started/main_concepts.md",
        texts.IMPORTS + texts.SHUFFLE_ON,
        {
            "    ...\n    shuffle": "    local='{data}', batch_size=2,\n    shuffle",
            "    ...\n)": ")",
        },
        _order("dataset"),
    ),
    "epoch_size": Snippet(
        "dataset_configuration/replication_and_sampling.md",
        texts.IMPORTS + texts.EPOCH_SIZE,
        {"    ...\n    epoch": "    local='{data}', batch_size=2,\n    epoch", "    ...\n)": ")"},
        _order("dataset"),
    ),
}


def _write_data(root: Path) -> dict[str, str]:
    dirs = {name: str(root / name) for name in ("data", "A", "B")}
    counts = {"data": (40, 0), "A": (100, 0), "B": (200, 1000)}
    for name, (count, base) in counts.items():
        with streamx.MDSWriter(
            out=dirs[name], columns={"x": "int", "y": "int"}, size_limit=400
        ) as w:
            for i in range(count):
                w.write({"x": base + i, "y": i % 2})
    dirs["cache"] = str(root / "cache")
    return dirs


def _prepare(snippet: Snippet, lib: str, dirs: dict[str, str]) -> str:
    code = snippet.code
    if lib == "streamx":
        code = code.replace("streaming", "streamx")  # the one change user code needs
    for placeholder, template in snippet.paths.items():
        code = code.replace(placeholder, template.format(**dirs))
    return code


def _run(snippet: Snippet, lib: str, root: Path) -> tuple[str | None, Any]:
    """Runs the snippet; returns (its exception type or None, probe facts or message)."""
    dirs = _write_data(root / "inputs")
    work = root / "cwd"
    work.mkdir()
    code = _prepare(snippet, lib, dirs)
    ns: dict[str, Any] = {"__name__": f"snippet_{lib}", "_lib": __import__(lib), "_tmp": str(root)}
    previous = os.getcwd()
    os.chdir(work)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")  # both libraries warn about missing batch_size
            try:
                if snippet.doctest:
                    _run_doctest(code, ns)
                else:
                    exec(compile(code, f"<{snippet.source}>", "exec", dont_inherit=True), ns)
            except Exception as err:
                return type(err).__name__, str(err)
            try:
                # What the snippet's objects then do, or the exception they raise.
                return None, snippet.probe(ns) if snippet.probe else None
            except Exception as err:
                return None, ("raised", type(err).__name__)
    finally:
        os.chdir(previous)


def _run_doctest(code: str, ns: dict[str, Any]) -> None:
    test = doctest.DocTestParser().get_doctest(code, ns, "snippet", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test, out=lambda _: None)
    if result.failed:
        raise AssertionError(f"{result.failed} doctest example(s) failed")


# Snippets whose documented code fails in mosaicml-streaming too (the docs' own bug); streamx
# must fail the same way.
BROKEN_IN_DOCS = {
    "user_guide": "NameError",  # ``-> Any`` is used without importing ``Any``
    "mixing_both_blocks": "ValueError",  # streams reused after a dataset weighted them
}


# Snippets where streamx deliberately differs (README, "Differences from mosaicml-streaming"):
# mosaicml-streaming raises, streamx runs the snippet.
DELIBERATE = {
    # A second StreamingDataset may reuse Stream objects a first one weighted.
    "mixing_both_blocks",
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet(tmp_path: Path, name: str) -> None:
    snippet = SNIPPETS[name]
    their_error, theirs = _run(snippet, "streaming", tmp_path / "theirs")
    our_error, ours = _run(snippet, "streamx", tmp_path / "ours")
    expected = BROKEN_IN_DOCS.get(name)
    assert their_error == expected, f"mosaicml-streaming: {theirs}"
    if name in DELIBERATE:
        assert our_error is None, f"streamx: {ours}"
        return
    assert our_error == expected, f"streamx: {ours}"
    if expected is None and snippet.probe is not None:
        assert ours == theirs
        assert ours not in (None, [], ())
