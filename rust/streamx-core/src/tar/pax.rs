//! The records of a pax extended header (`LEN key=value\n`) that the scan uses.

use super::numbers::py_int;

/// The `path` and `size` records of one pax header (the last of each wins, as in a map).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pax {
    pub path: Option<Vec<u8>>,
    pub size: Option<Vec<u8>>,
}

/// Parses every record of `data`; `None` where one is malformed (the caller names the
/// header). Records run until the data ends or a NUL starts the next one.
pub fn parse_pax(data: &[u8]) -> Option<Pax> {
    let mut pax = Pax::default();
    let mut pos = 0usize;
    while pos < data.len() && data[pos] != 0 {
        let space = data[pos..].iter().position(|&b| b == b' ').map(|i| pos + i);
        let length = match space {
            Some(space) if space > pos => py_int(&data[pos..space], 10).unwrap_or(0),
            _ => 0,
        };
        let end = usize::try_from(length)
            .ok()
            .and_then(|n| pos.checked_add(n))
            .filter(|&end| length > 0 && end <= data.len())?;
        // No space at all leaves the record empty (Python sliced from index 0 there, and
        // its length of 0 refused the record anyway).
        let from = space.map_or(end, |s| (s + 1).min(end));
        let record = &data[from..end];
        let equals = record.iter().position(|&b| b == b'=')?;
        let mut stripped = record.len();
        while stripped > 0 && record[stripped - 1] == b'\n' {
            stripped -= 1;
        }
        // The `=` is not a newline, so it lies before the stripped end.
        let (key, value) = (&record[..equals], &record[equals + 1..stripped]);
        match key {
            b"path" => pax.path = Some(value.to_vec()),
            b"size" => pax.size = Some(value.to_vec()),
            _ => {}
        }
        pos = end;
    }
    Some(pax)
}

/// A pax `size` value: decimal ASCII digits only (anything else is refused; Python's
/// `str.isdigit` also took other scripts' digits, which no tar writer emits).
pub fn pax_size(value: &[u8]) -> Option<i128> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0i128, |acc, &b| {
        acc.saturating_mul(10).saturating_add(i128::from(b - b'0'))
    }))
}
