//! Members grouped into samples as `WebDataset` groups them, laid out as the columns and text
//! of a member table (`python/streamx/format/webdataset/member_table.py`), so that a local
//! tar's table is built with no Python object per member.
//!
//! A member `dir/abc.seg.JPG` is the field `seg.jpg` of the sample keyed `dir/abc`: the key
//! runs to the first dot of the file name, which must not be its first byte; consecutive
//! members with one key form one sample; a top-level `__name__` is metadata, not a field.
//! Those are the Python grouping's rules (`samples.py`, a regular expression and
//! `str.lower`) for names of printable ASCII. Any other name, and a sample holding a field
//! twice, makes [`member_table`] answer `None`: the Python grouping then does the whole tar,
//! and its answer (or its error) is the only one.

use super::scan::Member;

/// Fields of one sample checked for a repeat by a scan of the ones before: past this many,
/// the Python grouping (a set) decides, so no hostile sample costs quadratic time here.
const MAX_FIELDS: usize = 64;

/// A member table's body: `first`, the key and name ends, `offset`, `size` (each
/// little-endian `i64`), then the keys and names, for `samples` samples of `fields` fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableBody {
    pub samples: u64,
    pub fields: u64,
    pub text: u64,
    pub bytes: Vec<u8>,
}

/// `(key, field)` of a member named `name`, `None` where it is no sample's field, or
/// `Err(())` where the name is outside the printable ASCII these rules are written for.
#[allow(clippy::type_complexity)]
fn split(name: &[u8]) -> Result<Option<(&[u8], Vec<u8>)>, ()> {
    if !name.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return Err(());
    }
    let base_at = name.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
    let base = &name[base_at..];
    let Some(dot) = base.iter().position(|&b| b == b'.') else {
        return Ok(None);
    };
    if dot == 0 {
        return Ok(None);
    }
    let top_level_meta = base_at == 0 && name.starts_with(b"__") && name.ends_with(b"__");
    if top_level_meta {
        return Ok(None);
    }
    Ok(Some((
        &name[..base_at + dot],
        base[dot + 1..].to_ascii_lowercase(),
    )))
}

fn push_i64(out: &mut Vec<u8>, values: &[i64]) {
    out.reserve(values.len() * 8);
    for value in values {
        out.extend_from_slice(&value.to_le_bytes());
    }
}

/// The member table body of `members` (in archive order), or `None` where the Python
/// grouping must decide (a name outside printable ASCII, a field twice in one sample).
pub fn member_table(members: &[Member]) -> Option<TableBody> {
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut names: Vec<Vec<u8>> = Vec::with_capacity(members.len());
    let mut first: Vec<i64> = vec![0];
    let (mut offsets, mut sizes) = (Vec::new(), Vec::new());
    let mut start = 0usize; // the current sample's first field
    for member in members {
        let Some((key, field)) = split(&member.name).ok()? else {
            continue;
        };
        if keys.last() != Some(&key) {
            if !keys.is_empty() {
                first.push(i64::try_from(names.len()).ok()?);
            }
            keys.push(key);
            start = names.len();
        } else if names.len() - start >= MAX_FIELDS || names[start..].contains(&field) {
            return None;
        }
        names.push(field);
        offsets.push(i64::try_from(member.offset).ok()?);
        sizes.push(i64::try_from(member.size).ok()?);
    }
    if !keys.is_empty() {
        first.push(i64::try_from(names.len()).ok()?);
    }
    let mut ends = Vec::with_capacity(keys.len() + names.len());
    let mut text = Vec::new();
    for part in keys.iter().copied().chain(names.iter().map(Vec::as_slice)) {
        text.extend_from_slice(part);
        ends.push(i64::try_from(text.len()).ok()?);
    }
    let mut bytes = Vec::new();
    for column in [&first, &ends, &offsets, &sizes] {
        push_i64(&mut bytes, column);
    }
    bytes.extend_from_slice(&text);
    Some(TableBody {
        samples: keys.len() as u64,
        fields: names.len() as u64,
        text: text.len() as u64,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(names: &[&str]) -> Vec<Member> {
        let at = |i: usize| 512 * (2 * i as u64 + 1);
        let member = |(i, name): (usize, &&str)| Member {
            name: name.as_bytes().to_vec(),
            offset: at(i),
            size: i as u64,
        };
        names.iter().enumerate().map(member).collect()
    }

    fn words(bytes: &[u8], count: usize) -> Vec<i64> {
        let word = |c: &[u8]| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        bytes.chunks(8).take(count).map(word).collect()
    }

    #[test]
    fn groups_by_key_with_fields_lower_cased() {
        let names = [
            "d/a.JPG",
            "d/a.seg.Cls",
            "__meta__",
            "d/.hidden",
            "noext",
            "b.txt",
        ];
        let body = member_table(&members(&names)).expect("plain names");
        assert_eq!((body.samples, body.fields), (2, 3));
        let text = &body.bytes[body.bytes.len() - body.text as usize..];
        assert_eq!(text, b"d/abjpgseg.clstxt");
        // first [0, 2, 3], then the key and name ends, offsets of members 0, 1 and 5.
        let columns = words(&body.bytes, 3 + 5 + 3);
        assert_eq!(&columns[..3], &[0, 2, 3]);
        assert_eq!(&columns[3..8], &[3, 4, 7, 14, 17]);
        assert_eq!(&columns[8..], &[512, 1536, 5632]);
    }

    #[test]
    fn leaves_other_names_and_repeats_to_python() {
        assert!(member_table(&members(&["a.txt", "a.txt"])).is_none());
        assert!(member_table(&members(&["caf\u{e9}.txt"])).is_none());
        assert!(member_table(&members(&["a\n.txt"])).is_none());
        let many: Vec<String> = (0..=MAX_FIELDS).map(|i| format!("k.f{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(member_table(&members(&many)).is_none());
        assert!(member_table(&members(&many[..MAX_FIELDS])).is_some());
    }

    #[test]
    fn an_archive_without_samples_is_an_empty_table() {
        let body = member_table(&members(&["__meta__", "README"])).expect("plain names");
        assert_eq!((body.samples, body.fields, body.text), (0, 0, 0));
        assert_eq!(body.bytes, 0i64.to_le_bytes());
    }
}
