//! `ledger_snapshot`: a read-only view of a cache ledger file, for `streamx cache`.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use streamx_core::cache::{snapshot, LedgerSnapshot, ShardState};

use crate::enter::enter_core;

fn state_name(state: ShardState) -> &'static str {
    match state {
        ShardState::Remote => "remote",
        ShardState::Preparing => "preparing",
        ShardState::Local => "local",
    }
}

fn to_dict<'py>(py: Python<'py>, snap: &LedgerSnapshot) -> PyResult<Bound<'py, PyDict>> {
    let shards = snap
        .shards
        .iter()
        .map(|s| {
            let d = PyDict::new(py);
            d.set_item("state", state_name(s.state))?;
            d.set_item("bytes", s.bytes)?;
            d.set_item("pins", s.pins)?;
            d.set_item("last_access_ns", s.last_access)?;
            d.set_item("evictable", s.evictable)?;
            d.set_item("owner_pid", s.owner.map(|(p, _)| p.pid))?;
            d.set_item("owner_alive", s.owner.map(|(_, alive)| alive))?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let pins = snap
        .pins
        .iter()
        .map(|p| {
            let d = PyDict::new(py);
            d.set_item("pid", p.process.pid)?;
            d.set_item("alive", p.alive)?;
            d.set_item("shard", p.shard)?;
            d.set_item("count", p.count)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    let out = PyDict::new(py);
    out.set_item("path", snap.path.to_string_lossy().into_owned())?;
    out.set_item("limit", snap.limit)?;
    out.set_item("usage", snap.usage)?;
    out.set_item("shards", shards)?;
    out.set_item("pins", pins)?;
    Ok(out)
}

/// Reads a cache ledger without locking, recovering or changing it.
#[pyfunction]
fn ledger_snapshot(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyDict>> {
    let snap = enter_core(py, move || snapshot(path))?;
    to_dict(py, &snap)
}

/// Adds `ledger_snapshot` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ledger_snapshot, m)?)
}
