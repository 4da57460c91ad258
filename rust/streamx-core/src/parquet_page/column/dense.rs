//! Pages whose rows all hold a value (no nulls, as most pages are): their rows' entries
//! found by whole runs of levels and indices, and, while they follow the entries in order
//! (distinct values), not mapped at all.

use super::{corrupt, plain, reserve, unsupported, Column, Refusal};
use crate::parquet_page::hybrid;

/// Whether every row of a page holds a value, from its definition levels' runs alone (the
/// usual page without nulls: one run of ones), so no row need be looked at one by one.
pub(super) fn all_present(levels: &[u8], count: usize) -> Result<bool, Refusal> {
    let mut all = true;
    hybrid::runs(levels, 1, count, &mut |run| {
        all &= matches!(run, hybrid::Run::Repeat(1, _));
        Ok(())
    })
    .map_err(|e| Refusal::Corrupt(format!("definition levels: {e}")))?;
    Ok(all)
}

/// A page whose `count` rows all hold a value: each row's entry appended at once (the
/// next plain values, or its dictionary index, checked against the dictionary's size).
pub(super) fn every_row(
    column: &mut Column,
    values_at: usize,
    encoding: i32,
    count: usize,
    dictionary: Option<u32>,
) -> Result<(), Refusal> {
    match encoding {
        0 => {
            let first = column.count;
            plain(column, values_at, count)?;
            if column.rows.is_empty() && first == column.direct {
                column.direct += count;
            } else {
                reserve(&mut column.rows, count)?;
                column.rows.extend(first as u32..column.count as u32);
            }
        }
        2 | 8 => {
            let Some(size) = dictionary else {
                return corrupt("dictionary indices without a dictionary page");
            };
            let Some((&width, runs)) = column.data[values_at..].split_first() else {
                return corrupt("dictionary indices without their bit width");
            };
            let mut entries: Vec<u32> = Vec::new();
            reserve(&mut entries, count)?;
            hybrid::decode_into(runs, u32::from(width), count, size, &mut entries)
                .map_err(|e| Refusal::Corrupt(format!("dictionary indices: {e}")))?;
            let first = column.direct;
            let in_order = (first..)
                .zip(&entries)
                .all(|(want, got)| want == *got as usize);
            if column.rows.is_empty() && in_order {
                column.direct += count;
            } else {
                reserve(&mut column.rows, count)?;
                column.rows.extend_from_slice(&entries);
            }
        }
        other => return unsupported(format!("value encoding {other}")),
    }
    Ok(())
}
