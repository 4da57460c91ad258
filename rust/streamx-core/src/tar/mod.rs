//! The regular files of a tar archive, found from its 512-byte headers alone.
//!
//! A tar is a run of headers, each followed by its member's data padded to 512 bytes, so
//! the headers give every member's name, offset and size without unpacking anything. The
//! scan asks its source for windows of the archive ([`ReadAt`]): a file read in place, an
//! archive held in memory, or (through the bindings) ranged GETs of a remote tar. It reads
//! on through small bodies in windows that double while it does and jumps over large ones
//! ([`Windowing`]), so a remote scan costs few round trips and never reads a big body.
//!
//! Handled: ustar names with a prefix, GNU long names (`L`), pax `path` and `size` records
//! (`x`), base-256 sizes. Skipped: directories, links, devices, global pax headers. Every
//! other header that does not parse is a [`ScanError::Corrupt`] naming the archive and the
//! header's offset; no input panics or sizes an allocation past the archive or the window.

mod numbers;
mod pax;
mod scan;
mod source;
mod table;
#[cfg(test)]
mod tests;

pub use numbers::bytes_repr;
pub use scan::{Member, ScanError, TarScanner, Windowing};
pub use source::{FileSource, ReadAt, SliceSource};
pub use table::{member_table, TableBody};
