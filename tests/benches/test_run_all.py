"""``benches/run_all.py`` passes each option only to the scripts that declare it: a
``--quick`` smoke run must not fail the scripts without a quick mode, nor run them at full
size (it skips them and lists them). The runs here are of
tiny stand-in scripts (the real benches take minutes); the real scripts are only parsed."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A bench that prints the arguments its parser accepted, and refuses any other (as
# argparse does: exit status 2).
_BENCH = """\
import argparse
parser = argparse.ArgumentParser()
{options}
print("ran", sorted(vars(parser.parse_args()).items()))
"""


def _run_all() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "benches/run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bench(tmp_path: Path, name: str, *options: str) -> Path:
    script = tmp_path / name
    lines = "\n".join(options) or "pass"
    script.write_text(_BENCH.format(options=lines), encoding="utf-8")
    return script


def test_options_go_only_to_the_scripts_that_declare_them(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_all = _run_all()
    scripts = [
        _bench(tmp_path, "bench_a.py", 'parser.add_argument("--quick", action="store_true")'),
        _bench(tmp_path, "bench_b.py"),
        _bench(
            tmp_path,
            "bench_c.py",
            'parser.add_argument("--quick", action="store_true")',
            'parser.add_argument("--before", help="a tree")',
        ),
    ]
    assert run_all.main(["--before", "DIR"], scripts) == 0
    out = capfd.readouterr().out
    assert "ran [('quick', False)]" in out
    assert "ran []" in out
    assert "ran [('before', 'DIR'), ('quick', False)]" in out
    assert "== bench_b.py (takes no --before)" in out


def test_quick_skips_the_scripts_without_a_quick_mode_and_lists_them(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_all = _run_all()
    scripts = [
        _bench(tmp_path, "bench_a.py", 'parser.add_argument("--quick", action="store_true")'),
        _bench(tmp_path, "bench_b.py"),
        _bench(tmp_path, "bench_c.py", 'parser.add_argument("--before", help="a tree")'),
    ]
    assert run_all.main(["--quick", "--before", "DIR"], scripts) == 0
    out = capfd.readouterr().out
    assert out.count("ran ") == 1 and "ran [('quick', True)]" in out  # only bench_a ran
    assert "== bench_b.py skipped (no --quick mode" in out
    assert "== bench_c.py skipped (no --quick mode" in out
    assert out.rstrip().endswith("skipped (no --quick mode): bench_b.py, bench_c.py")


def test_a_failing_script_is_counted(tmp_path: Path) -> None:
    failing = tmp_path / "bench_fail.py"
    failing.write_text("raise SystemExit(3)\n", encoding="utf-8")
    assert _run_all().main([], [failing, _bench(tmp_path, "bench_ok.py")]) == 1


def test_a_value_without_its_option_is_refused_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="'DIR' is not an option"):
        _run_all().main(["DIR", "--quick"], [_bench(tmp_path, "bench_never.py")])


def test_the_real_benches_declare_quick_as_their_parsers_do() -> None:
    run_all = _run_all()
    benches = sorted((ROOT / "benches").glob("bench_*.py"))
    assert benches
    quick = {script.name for script in benches if "--quick" in run_all.declared_options(script)}
    assert {"bench_io.py", "bench_plan.py", "bench_write.py"} <= quick
    assert "bench_convert.py" not in quick and "bench_spark.py" not in quick
    taken, left = run_all.arguments_for(ROOT / "benches/bench_index.py", ["--before=D", "--x"])
    assert (taken, left) == (["--before=D"], ["--x"])
