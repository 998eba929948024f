//! The write-ahead journal: commit = one record appended to a preallocated journal file;
//! recovery = replay of the records after the data file's header.
//!
//! Journal file lifecycle (files live in `<db>/journal/`, named `<generation>.jnl`, generation as
//! 16 decimal digits):
//!
//! ```text
//!  created (zeros written, synced — ahead, as `spare.jnl.tmp`, with a background flusher —
//!  renamed, dir synced) ──▶ current ──▶ live (full, records not
//!  yet flushed) ──▶ retired (every record <= flushed header) ──▶ recycled (renamed to a new
//!  generation, dir synced) ──▶ current ...   or deleted when more than `journal_files_kept`.
//! ```

pub(crate) mod record;
pub(crate) mod recovery;
pub(crate) mod writer;

pub(crate) use writer::Journal;

use std::path::{Path, PathBuf};

pub(crate) const DIR: &str = "journal";

pub(crate) fn file_name(generation: u64) -> String {
    format!("{generation:016}.jnl")
}

pub(crate) fn path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(file_name(generation))
}

/// Generation of a journal file name, `None` for other names.
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".jnl")?;
    if stem.len() != 16 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Position of a record: journal generation and byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct JournalPos {
    pub generation: u64,
    pub offset: u64,
}
