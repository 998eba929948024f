//! The write-ahead journal: commit = one record appended to a preallocated journal file;
//! recovery = replay of the records after the data file's header.
//!
//! Journal file lifecycle (files live in `<db>/journal/`, named `<generation>.jnl`, generation in
//! decimal, zero padded to 16 digits, wider past 10^16):
//!
//! ```text
//!  created (zeros written, synced — ahead, as `spare.jnl.tmp`, with a background flusher —
//!  renamed, dir synced) ──▶ current ──▶ live (full, records not
//!  yet flushed) ──▶ retired (every record <= flushed header) ──▶ recycled (renamed to a new
//!  generation, dir synced) ──▶ current ...   or deleted when more than `journal_files_kept`
//!  are kept, or when made bigger than `journal_file_bytes` for one huge record.
//!  A clean `close` (every record flushed) deletes every journal file (`Space::release_all`).
//! ```

pub(crate) mod record;
pub(crate) mod recovery;
pub(crate) mod space;
pub(crate) mod writer;

pub(crate) use space::Space;
pub(crate) use writer::Journal;

use std::path::{Path, PathBuf};

pub(crate) const DIR: &str = "journal";

pub(crate) fn file_name(generation: u64) -> String {
    format!("{generation:016}.jnl")
}

pub(crate) fn path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(file_name(generation))
}

/// Generation of a journal file name, `None` for other names. Strict: exactly the names
/// `file_name` writes, at any width it writes (16 digits zero padded, up to 20 for the largest
/// generations), so `"00000000000000099.jnl"` or `"+000000000000099.jnl"` are not journal files.
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".jnl")?;
    if !(16..=20).contains(&stem.len()) || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let g: u64 = stem.parse().ok()?;
    (file_name(g) == name).then_some(g)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_parse_strictly_at_every_width() {
        for g in [0, 1, 99, 9_999_999_999_999_999, 10_000_000_000_000_000, u64::MAX] {
            assert_eq!(super::parse_name(&super::file_name(g)), Some(g), "{g}");
        }
        for bad in [
            "00000000000000099.jnl",
            "+000000000000099.jnl",
            "99.jnl",
            "000000000000009x.jnl",
            "0000000000000099.jnl.tmp",
            "0000000000000099.jnl.ignored",
            "18446744073709551616.jnl",
            "000000000000000000099.jnl",
        ] {
            assert_eq!(super::parse_name(bad), None, "{bad}");
        }
    }
}

/// Position of a record: journal generation and byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct JournalPos {
    pub generation: u64,
    pub offset: u64,
}

/// As a person finds it: the journal file's name (FORMAT.md §1) and the byte offset in it.
impl std::fmt::Display for JournalPos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{DIR}/{:016}.jnl, offset {}", self.generation, self.offset)
    }
}
