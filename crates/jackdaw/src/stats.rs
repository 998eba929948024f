//! Counters shared by every layer, and the public stats types.

use crate::storage::SyncSite;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Monotonic counters, updated with relaxed atomics.
#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub commits: AtomicU64,
    pub journal_writes: AtomicU64,
    pub journal_direct_writes: AtomicU64,
    pub journal_bytes_raw: AtomicU64,
    pub journal_bytes_stored: AtomicU64,
    pub journal_bytes_full: AtomicU64,
    pub journal_files_created: AtomicU64,
    pub journal_files_recycled: AtomicU64,
    pub journal_files_prepared: AtomicU64,
    pub stray_journal_files: AtomicU64,
    pub flushes: AtomicU64,
    pub flushed_pages: AtomicU64,
    pub written_once_pages: AtomicU64,
    pub spilled_pages: AtomicU64,
    pub syncs: [AtomicU64; SyncSite::ALL.len()],
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn synced(&self, site: SyncSite) {
        self.syncs[site.index()].fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// Pages by kind (of one commit, or of one flush).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PagesByKind {
    pub leaf: u64,
    pub branch: u64,
    pub overflow: u64,
    /// Free-space bitmap pages.
    pub freemap: u64,
    pub meta: u64,
    /// Raw pages of tests and tools.
    pub raw: u64,
}

impl PagesByKind {
    /// Count one page whose header names `kind` (`None`: an unknown kind byte, counted as raw).
    pub(crate) fn count(&mut self, kind: Option<crate::data::page::PageKind>) {
        use crate::data::page::PageKind as K;
        match kind {
            Some(K::Leaf) => self.leaf += 1,
            Some(K::Branch) => self.branch += 1,
            Some(K::Overflow) => self.overflow += 1,
            Some(K::FreeMap) => self.freemap += 1,
            Some(K::Meta) => self.meta += 1,
            Some(K::Raw) | None => self.raw += 1,
        }
    }
}

impl std::fmt::Display for PagesByKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "leaf {} branch {} overflow {} freemap {} meta {} raw {}",
            self.leaf, self.branch, self.overflow, self.freemap, self.meta, self.raw
        )
    }
}

/// What one commit did, returned by `WriteTxn::commit`.
#[derive(Debug, Clone, Default)]
pub struct CommitStats {
    /// The transaction's id (0 for an empty transaction, which writes nothing).
    pub txid: u64,
    /// Pages the transaction wrote (journaled or written once).
    pub pages: usize,
    /// Pages written straight to the data file ("written once").
    pub written_once_pages: usize,
    /// Page writes done before commit by spilling (`Options::max_dirty_pages`); a page spilled,
    /// changed again and spilled again counts twice.
    pub spilled_pages: usize,
    /// `pages` by kind (pages streamed in by `put_reader` count as overflow).
    pub pages_by_kind: PagesByKind,
    /// Journal payload as full page images would take it.
    pub journal_bytes_full: u64,
    /// Journal payload after diffing, before compression.
    pub journal_bytes_raw: u64,
    /// Bytes written to the journal (after compression, with header and padding).
    pub journal_bytes_written: u64,
    /// Wall time of `commit()`.
    pub time: Duration,
}

/// One live read transaction, as seen by `Env::stats`.
#[derive(Debug, Clone)]
pub struct ReaderInfo {
    /// The snapshot's transaction id.
    pub txid: u64,
    /// How long ago it began.
    pub age: Duration,
    /// Bytes of page versions committed after it that the flusher cannot retire while it lives.
    pub pinned_bytes: u64,
}

/// A picture of an environment, from `Env::stats`.
#[derive(Debug, Clone)]
pub struct Stats {
    pub page_size: usize,
    /// Pages below the high-water mark that are not free (the two header slots excluded).
    pub pages_in_use: u64,
    pub free_pages: u64,
    /// The page high-water mark (pages ever allocated, free or not).
    pub next_page: u64,
    pub data_file_bytes: u64,
    pub journal_file_bytes: u64,
    pub journal_files: usize,
    pub journal_files_created: u64,
    pub journal_files_recycled: u64,
    /// Of `journal_files_created`, the files whose zeros were written ahead on the spare thread
    /// (background flusher only), so that no commit waited for them.
    pub journal_files_prepared: u64,
    /// Files named like journal files that held no record of this database when it was opened:
    /// renamed to `<name>.ignored` and never read (a copy, a restore tool or a user left them).
    pub stray_journal_files: u64,
    pub journal_io: &'static str,
    pub last_committed_txid: u64,
    pub last_flushed_txid: u64,
    pub oldest_reader_txid: Option<u64>,
    pub readers: Vec<ReaderInfo>,
    /// Bytes of committed page versions held in memory, not yet in the data file.
    pub scratch_bytes: u64,
    pub commits: u64,
    pub journal_writes: u64,
    pub journal_direct_writes: u64,
    /// Journal payload bytes as full page images, after diffing, and as written.
    pub journal_bytes_full: u64,
    pub journal_bytes_raw: u64,
    pub journal_bytes_written: u64,
    pub flushes: u64,
    pub flushed_pages: u64,
    pub written_once_pages: u64,
    /// Page writes done by write transactions before commit, spilling (see `CommitStats`).
    pub spilled_pages: u64,
    /// Overflow values read as one run of consecutive pages with positional reads (`preadv`),
    /// instead of page by page through the map (see `tree/overflow.rs`).
    pub overflow_run_reads: u64,
    /// Device syncs (fsync/fdatasync) by call site name; `O_DSYNC` journal writes are counted in
    /// `journal_direct_writes`.
    pub syncs: Vec<(&'static str, u64)>,
    pub poisoned: bool,
}

/// The result of a successful `Env::check`.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub pages_checked: u64,
    pub pages_in_use: u64,
    pub free_pages: u64,
    pub bitmap_pages: u64,
    pub journal_records: u64,
    /// Pages the layer above reported as reachable (0 when no walker is registered).
    pub reachable_pages: u64,
}
