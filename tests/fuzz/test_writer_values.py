"""Hypothesis over sample values in the MDS writer, with mosaicml-streaming as the oracle: a
value is refused at ``write`` time exactly when mosaic refuses it, and what is written is
byte for byte what mosaic writes (and streamx reads it back)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamx
from streamx.exceptions import StreamxError

streaming = pytest.importorskip("streaming")

_COLUMNS = {"i": "int", "s": "str", "b": "bytes", "f": "float64", "u": "uint8", "j": "json"}
_ANY = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8)
)
_SAMPLES = st.fixed_dictionaries(
    {
        "i": st.integers(-(2**63), 2**63 - 1) | _ANY,
        "s": st.text(max_size=20) | _ANY,
        "b": st.binary(max_size=20) | _ANY,
        "f": st.floats(allow_nan=False) | _ANY,
        "u": st.integers(0, 255) | _ANY,
        "j": st.recursive(
            st.none() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
            max_leaves=6,
        ),
    }
)


_REFUSED = (StreamxError, TypeError, ValueError, OverflowError, KeyError, AttributeError)


def _write_all(writer_cls: Any, out: str, samples: list[dict[str, Any]]) -> list[bool]:
    """Writes each sample, noting which ones the writer refused."""
    accepted = []
    with writer_cls(out=out, columns=_COLUMNS, size_limit=1 << 12) as writer:
        for sample in samples:
            try:
                writer.write(sample)
            except _REFUSED:
                accepted.append(False)
            else:
                accepted.append(True)
    return accepted


def _files(out: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in Path(out).iterdir() if p.suffix == ".mds"}


def _roundtrip(samples: list[dict[str, Any]]) -> None:
    """streamx accepts exactly what mosaicml-streaming accepts and writes the same bytes."""
    with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as theirs:
        accepted = _write_all(streamx.MDSWriter, ours, samples)
        assert accepted == _write_all(streaming.MDSWriter, theirs, samples)
        assert _files(ours) == _files(theirs)
        assert len(streamx.LocalDataset(ours)) == sum(accepted)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_SAMPLES, min_size=1, max_size=6))
def test_values_round_trip_or_are_refused(samples: list[dict[str, Any]]) -> None:
    _roundtrip(samples)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_SAMPLES, min_size=1, max_size=20))
def test_values_round_trip_or_are_refused_long(samples: list[dict[str, Any]]) -> None:
    _roundtrip(samples)
