//! Counters shared by every layer, and the public stats types.

use crate::ids::{PageNo, TxId};
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
    /// A gauge, not a count: bytes of the journal records not yet flushed (added when a record
    /// is written, taken off when the flusher passes it).
    pub journal_unflushed_bytes: AtomicU64,
    pub flushes: AtomicU64,
    pub flushed_pages: AtomicU64,
    pub written_once_pages: AtomicU64,
    pub written_once_reused_pages: AtomicU64,
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
    pub txid: TxId,
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
    pub txid: TxId,
    /// How long ago it began.
    pub age: Duration,
    /// What it keeps from being retired while it lives: the distinct pages changed after it
    /// (their versions stay in memory, a page changed many times counted once) times the page
    /// size, plus the journal bytes of the transactions committed after it (their files stay on
    /// disk until the flusher can pass it).
    pub pinned_bytes: u64,
}

/// A picture of an environment, from `Env::stats`.
#[derive(Debug, Clone)]
pub struct Stats {
    pub page_size: usize,
    /// Pages below the high-water mark that are not free (the two header slots excluded).
    pub pages_in_use: u64,
    /// `pages_in_use × page_size`: the bytes of the data file holding something (tree pages,
    /// overflow pages, free-space bitmaps, the meta page), however full those pages are. The
    /// bytes of keys and values themselves are not tracked (counting them would need a walk):
    /// `Env::check` reports them, `CheckReport::live_bytes`.
    pub used_bytes: u64,
    pub free_pages: u64,
    /// The page high-water mark (pages ever allocated, free or not).
    pub next_page: u64,
    pub data_file_bytes: u64,
    /// Bytes of the data file above the high-water mark: room grown ahead of the writer, given
    /// back to the file system at `close` (DURABILITY §8.3 step 7b).
    pub slack_bytes: u64,
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
    pub last_committed_txid: TxId,
    pub last_flushed_txid: TxId,
    pub oldest_reader_txid: Option<TxId>,
    pub readers: Vec<ReaderInfo>,
    /// Bytes of committed page versions held in memory, not yet in the data file.
    pub scratch_bytes: u64,
    /// Bytes of page versions already in the data file and out of the page table that stay in
    /// memory while read transactions begun before their flush live (they may be reading them
    /// in place); freed when those transactions end. Not counted in `max_pinned_bytes`.
    pub retired_kept_bytes: u64,
    /// Bytes of page buffers kept for the writer's next copies: up to as many pages as the last
    /// flush wrote out (4,096 at least, `Options::flush_threshold_bytes` worth at most), back to
    /// at most 4,096 pages once no commit came for `Options::flush_idle` (background flusher).
    pub pooled_bytes: u64,
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
    /// Of `written_once_pages`, the pages written in place of free pages (a large value
    /// overwritten reuses the space the old one freed, once a flush has passed the free), not
    /// appended to the file.
    pub written_once_reused_pages: u64,
    /// Page writes done by write transactions before commit, spilling (see `CommitStats`).
    pub spilled_pages: u64,
    /// Overflow values read as one run of consecutive pages copied out of the map, instead of
    /// walked page by page (see `tree/overflow.rs`).
    pub overflow_run_reads: u64,
    /// Device syncs (fsync/fdatasync) by call site name; `O_DSYNC` journal writes are counted in
    /// `journal_direct_writes`.
    pub syncs: Vec<(&'static str, u64)>,
    pub poisoned: bool,
}

/// The result of `Env::check`: what was verified, and every problem found (none when the
/// database is sound).
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub pages_checked: u64,
    pub pages_in_use: u64,
    pub free_pages: u64,
    pub bitmap_pages: u64,
    pub journal_records: u64,
    /// Pages the layer above reported as reachable (0 when no walker is registered).
    pub reachable_pages: u64,
    /// Bytes of keys and values the named trees hold, as the user stored them: per key-value
    /// pair, the key's length plus the value's (a large value at its full length; in a
    /// multi-value tree, the key once per value). No page, slot or entry header is counted, so
    /// `Stats::data_file_bytes / live_bytes` is the data file's space amplification. Counted by
    /// the tree walk (0 from `check_with`, which walks no tree).
    pub live_bytes: u64,
    /// Every problem found, in the order the check met them; empty when the database is sound.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// True when the check found no problem.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// `Ok(self)` when clean; otherwise `Err(Error::Corrupted)` with the first problem's page and
    /// every problem, one a line (the behaviour of `check()` before it returned its findings).
    pub fn into_result(self) -> crate::Result<CheckReport> {
        match self.problems.first() {
            None => Ok(self),
            Some(first) => Err(crate::Error::Corrupted {
                page: first.page,
                reason: self.problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"),
            }),
        }
    }
}

/// One finding of `Env::check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The data file page the problem is at, when one is known.
    pub page: Option<PageNo>,
    /// The tree whose walk found the problem (`(root)` for the catalog of trees; a nested tree
    /// of a multi-value tree is named `NAME/nested`), when a tree walk found it.
    pub tree: Option<String>,
    /// What part of the database is at fault.
    pub kind: ProblemKind,
    /// The problem in words.
    pub detail: String,
}

/// What part of the database a [`Problem`] is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The data file's header slots.
    Header,
    /// The free-space bitmaps against the allocator and the high-water mark.
    FreeSpaceMap,
    /// A page fails its own check (checksum, page number, kind), or cannot be read.
    PageChecksum,
    /// A tree's structure: key order, fences, page kinds and levels, entries, counts.
    TreeOrder,
    /// An overflow chain of a large value.
    Overflow,
    /// Reachability: a page reachable twice, reachable but free or not allocatable, or in use
    /// but reachable from nothing (leaked).
    Reachability,
    /// The journal files and their chain against the header and the writer.
    Journal,
    /// The page table's in-memory state (versions not yet in the data file).
    PageTable,
}

impl ProblemKind {
    fn words(self) -> &'static str {
        match self {
            ProblemKind::Header => "header",
            ProblemKind::FreeSpaceMap => "free-space map",
            ProblemKind::PageChecksum => "page check",
            ProblemKind::TreeOrder => "tree structure",
            ProblemKind::Overflow => "overflow chain",
            ProblemKind::Reachability => "reachability",
            ProblemKind::Journal => "journal",
            ProblemKind::PageTable => "page table",
        }
    }
}

impl std::fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.words())
    }
}

impl Problem {
    pub(crate) fn new(kind: ProblemKind, page: Option<u64>, tree: Option<&str>, detail: impl Into<String>) -> Problem {
        Problem { page: page.map(PageNo::new), tree: tree.map(str::to_owned), kind, detail: detail.into() }
    }

    /// A problem from an error: the page of a `Corrupted` error (else `page`), the error's
    /// message after `prefix`.
    pub(crate) fn from_error(
        kind: ProblemKind,
        page: Option<u64>,
        tree: Option<&str>,
        prefix: &str,
        e: &crate::Error,
    ) -> Problem {
        let page = match e {
            crate::Error::Corrupted { page: Some(p), .. } => Some(p.get()),
            _ => page,
        };
        Problem::new(kind, page, tree, format!("{prefix}{e}"))
    }
}

impl std::fmt::Display for Problem {
    /// `KIND problem: DETAIL`, and the page in words when the detail does not name it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} problem: {}", self.kind, self.detail)?;
        if let Some(p) = self.page {
            if !self.detail.contains(&format!("page {p}")) {
                write!(f, " (at page {p})")?;
            }
        }
        Ok(())
    }
}
