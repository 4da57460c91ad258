//! Numbers of tar headers and pax records, parsed as Python's `int()` parses them (the scan
//! replaced a Python parser; a header it accepted must give the same value here), and
//! bytes shown as Python's `repr` shows them, for errors that read the same as before.

/// The bytes Python's `bytes.strip()` removes (ASCII whitespace).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Python's `int(text, base)` for base 8 or 10: `None` where Python raises `ValueError`.
/// Values past `i128` saturate (every caller compares them against a file size).
pub fn py_int(text: &[u8], base: u32) -> Option<i128> {
    let start = text.iter().position(|&b| !is_space(b))?;
    let end = text.iter().rposition(|&b| !is_space(b))? + 1;
    let mut digits = &text[start..end];
    let negative = digits.first() == Some(&b'-');
    if matches!(digits.first(), Some(b'-' | b'+')) {
        digits = &digits[1..];
    }
    let mut prefixed = false;
    if base == 8 && digits.len() >= 2 && digits[0] == b'0' && matches!(digits[1], b'o' | b'O') {
        digits = &digits[2..];
        prefixed = true;
        if digits.first() == Some(&b'_') {
            digits = &digits[1..];
        }
    }
    let mut value: i128 = 0;
    let mut seen = false;
    let mut last_underscore = false;
    for &b in digits {
        if b == b'_' {
            if !seen || last_underscore {
                return None;
            }
            last_underscore = true;
            continue;
        }
        let digit = u32::from(b).wrapping_sub(u32::from(b'0'));
        if digit >= base {
            return None;
        }
        last_underscore = false;
        seen = true;
        value = value
            .saturating_mul(i128::from(base))
            .saturating_add(i128::from(digit));
    }
    if !seen || last_underscore {
        return None;
    }
    // Base 10 refuses a leading zero unless the number is zero ("0_0" is fine, "01" is not).
    if base == 10 && !prefixed && digits[0] == b'0' && value != 0 {
        return None;
    }
    Some(if negative { -value } else { value })
}

/// A header's numeric field: base-256 where its first byte's top bit is set, else octal
/// text up to the first NUL with spaces and NULs around it. `Err` carries the text shown
/// in the error (at most 20 bytes of it).
pub fn field_number(field: &[u8]) -> Result<i128, Vec<u8>> {
    if let Some(&first) = field.first() {
        if first & 0x80 != 0 {
            // Fields are at most 12 bytes: 11 after the marker fit in an i128.
            let value = field[1..].iter().fold(0i128, |acc, &b| {
                acc.saturating_mul(256).saturating_add(i128::from(b))
            });
            return Ok(if first & 0x40 != 0 { -value } else { value });
        }
    }
    let text = field.split(|&b| b == 0).next().unwrap_or(&[]);
    let start = text.iter().position(|&b| b != b' ').unwrap_or(text.len());
    let end = text
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(start, |e| e + 1);
    let text = &text[start..end.max(start)];
    if text.is_empty() {
        return Ok(0);
    }
    py_int(text, 8).ok_or_else(|| text[..text.len().min(20)].to_vec())
}

/// `data` as Python's `repr(bytes)` writes it: `b'...'`, or `b"..."` when it holds a `'`
/// and no `"`.
pub fn bytes_repr(data: &[u8]) -> String {
    let quote = if data.contains(&b'\'') && !data.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(data.len() + 3);
    out.push('b');
    out.push(quote);
    for &b in data {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            _ if char::from(b) == quote => {
                out.push('\\');
                out.push(quote);
            }
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\x");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
    out.push(quote);
    out
}
