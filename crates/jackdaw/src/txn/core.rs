//! The state shared by an environment's transactions, flusher and handles.

use super::alloc::AllocSummary;
use super::page_table::PageTable;
use super::readers::{AllLanes, Readers};
pub(crate) use super::readers::{Committed, Memo};
use crate::data::{DataFile, Header};
use crate::journal::{Journal, JournalPos, Space};
use crate::options::Options;
use crate::stats::Counters;
use crate::storage::LockGuard;
use crate::sync::AtomicBool;
use crate::sync::{Condvar, Mutex};
use crate::{Error, PageNo, Result, TxId};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// What the flusher needs to know about one committed transaction.
pub(crate) struct TxRecord {
    pub txid: TxId,
    pub pages: Vec<PageNo>,
    /// Free pages below its base's high-water mark that it wrote once (`PageTxn::claim_free`):
    /// in the data file already, so not flushed, but named by its record until a flush passes it.
    pub reclaimed: Vec<PageNo>,
    pub next_page: PageNo,
    /// Journal position just after this transaction's record (set once it is written).
    pub journal_end: Option<JournalPos>,
    /// Length of its journal record (set once it is written).
    pub journal_bytes: u64,
}

/// Flusher control (under `Core::flusher_ctl`).
#[derive(Default)]
pub(crate) struct FlusherCtl {
    pub requested: bool,
    /// A commit left several journal files with unsynced records (`Journal::sync_ahead_due`):
    /// make the journal durable, without a flush.
    pub sync_journal: bool,
    pub stop: bool,
    /// Flushes completed, so `flush()` callers can wait for the next one.
    pub runs: u64,
    pub last_error: Option<Error>,
}

pub(crate) struct Core {
    pub(super) opts: Options,
    pub(super) page_size: usize,
    pub(super) db_id: u64,
    pub(super) dir: PathBuf,
    pub(super) journal_dir: PathBuf,
    pub(super) data: DataFile,
    pub(super) journal: Mutex<Journal>,
    /// The journal's files: where the next record goes. Lock order: `journal` before `space`
    /// when both are held (only `stats` and `check` hold both).
    pub(super) space: Mutex<Space>,
    /// Signalled after every append: prepared transactions wait here for their turn.
    pub(super) journal_cv: Condvar,
    pub(super) table: PageTable,
    /// The last prepared transaction: the base of the next write transaction.
    pub(super) prepared: Mutex<Committed>,
    pub(super) txlog: Mutex<VecDeque<TxRecord>>,
    /// Live readers and the committed state they begin from (lanes: see `readers.rs`).
    pub(super) readers: Readers,
    /// The single-writer lock.
    pub(super) writer: crate::sync::WriterLock,
    pub(super) alloc: Mutex<AllocSummary>,
    /// Held by a flush from start to end; guards the last written header.
    pub(super) flush_state: Mutex<Header>,
    /// Set (under `flush_state`) while a flush writes pages into the data file, cleared once its
    /// header is written: a flush that failed in between (without poisoning: a `Corrupted`
    /// error) may have left bitmap pages newer than the header, which `reusable_pages` reads.
    pub(super) flush_torn: AtomicBool,
    pub(super) flusher_ctl: Mutex<FlusherCtl>,
    pub(super) flusher_cv: Condvar,
    pub(super) counters: Arc<Counters>,
    /// One more than the highest tree id handed out in this process: ids of trees created in
    /// aborted transactions are never handed out again, so a stale handle cannot alias a new tree.
    pub(super) tree_ids: crate::sync::AtomicU64,
    /// The last flushed transaction (mirrors the header, readable without waiting for a flush).
    pub(super) flushed_txid: crate::sync::AtomicU64,
    /// Journal bytes written when the last flush began.
    pub(super) journal_bytes_at_flush: crate::sync::AtomicU64,
    /// The data file's length when a commit last nudged the flusher to grow it (one nudge per
    /// length, not one per commit while the flusher works).
    pub(super) grow_nudged_at: crate::sync::AtomicU64,
    /// A commit asked the flusher to sync the journal and it has not done so yet (one wake-up
    /// per request, not one per commit meanwhile).
    pub(super) sync_nudged: crate::sync::AtomicBool,
    /// The high-water mark recovered at open. The flusher grows the file ahead only once a
    /// commit has moved the mark past it (`grow_due`).
    opened_next_page: u64,
    pub(super) poisoned: Mutex<Option<String>>,
    pub(super) closed: AtomicBool,
    /// Set under `readers` when `close` has finished its last write: from then on the locks go
    /// as soon as no transaction is alive.
    pub(super) close_done: AtomicBool,
    /// The `lock` file's and the data file's locks; `None` once released after `close`.
    pub(super) lock: Mutex<Option<Box<dyn LockGuard>>>,
}

/// What an open found and built (`env.rs`, `readonly.rs`): the parts of a [`Core`] that differ
/// between opens. Everything else starts empty: no reader, no writer, no pending commit.
pub(crate) struct Opened {
    pub opts: Options,
    pub dir: PathBuf,
    pub journal_dir: PathBuf,
    pub data: DataFile,
    /// The header the state starts from (after recovery): page size, database id, flushed txid.
    pub header: Header,
    pub journal: Journal,
    pub space: Space,
    /// Page versions not in the data file (a read-only open's replay keeps them here).
    pub table: PageTable,
    /// The last transaction recovered: the state new snapshots and the next writer start from.
    pub committed: Committed,
    pub alloc: AllocSummary,
    pub counters: Arc<Counters>,
    pub lock: Box<dyn LockGuard>,
}

impl Core {
    pub(crate) fn new(o: Opened) -> Core {
        let h = o.header;
        Core {
            page_size: h.page_size as usize,
            db_id: h.db_id,
            dir: o.dir,
            journal_dir: o.journal_dir,
            data: o.data,
            journal: Mutex::new(o.journal),
            space: Mutex::new(o.space),
            journal_cv: Condvar::new(),
            table: o.table,
            prepared: Mutex::new(o.committed),
            txlog: Mutex::new(VecDeque::new()),
            readers: Readers::new(o.committed),
            writer: crate::sync::WriterLock::default(),
            alloc: Mutex::new(o.alloc),
            flush_state: Mutex::new(h),
            flush_torn: AtomicBool::new(false),
            flusher_ctl: Mutex::new(FlusherCtl::default()),
            flusher_cv: Condvar::new(),
            counters: o.counters,
            journal_bytes_at_flush: crate::sync::AtomicU64::new(0),
            grow_nudged_at: crate::sync::AtomicU64::new(0),
            sync_nudged: crate::sync::AtomicBool::new(false),
            opened_next_page: o.committed.next_page.get(),
            tree_ids: crate::sync::AtomicU64::new(1),
            flushed_txid: crate::sync::AtomicU64::new(h.flushed_txid),
            poisoned: Mutex::new(None),
            closed: AtomicBool::new(false),
            close_done: AtomicBool::new(false),
            lock: Mutex::new(Some(o.lock)),
            opts: o.opts,
        }
    }

    /// The options the environment was opened with.
    #[inline]
    pub(crate) fn opts(&self) -> &Options {
        &self.opts
    }

    /// The database's page size (fixed at creation).
    #[inline]
    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    /// The database's id (in its header, every journal record and every tree handle).
    #[inline]
    pub(crate) fn db_id(&self) -> u64 {
        self.db_id
    }

    /// The database's directory.
    pub(crate) fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Whether `close` has begun: new transactions are refused.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Make every committed transaction durable (`Env::sync`); returns the last durable txid.
    /// A failed sync poisons the environment.
    pub(crate) fn sync_committed(&self) -> Result<u64> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        if let Some(why) = self.poisoned.lock().clone() {
            return Err(Error::Poisoned(why));
        }
        let target = self.committed().txid;
        if self.opts.read_only {
            // Every transaction it sees is durable already (in the data file or the journal).
            return Ok(target.get());
        }
        if self.journal.lock().failed() {
            return Err(Error::Poisoned("an earlier journal write failed".into()));
        }
        Journal::make_durable(&self.journal, target.get()).inspect_err(|e| self.poison(e))?;
        Ok(self.journal.lock().durable_txid())
    }

    /// One more than the highest tree id handed out in this process (see `tree_ids`).
    pub(crate) fn tree_ids(&self) -> u64 {
        self.tree_ids.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A write transaction from state `from` prepared state `to`, changing no tree's name, only
    /// (perhaps) descriptors: state `to`'s read memo is `next(from's memo)`, so the first read
    /// transaction at `to` needs no catalog lookup (YCSB: every read after an update made one,
    /// ~690 instructions). `next` runs outside the memo's lock.
    pub(crate) fn hand_on_read_memo(&self, from: TxId, to: TxId, next: impl FnOnce(&Memo) -> Option<Memo>) {
        let Some(m) = self.readers.memo(from) else { return };
        if let Some(n) = next(&m) {
            self.readers.hand_on_memo(from, to, n);
        }
    }

    /// Tree ids below `next` have been handed out (a write transaction's, committed or not).
    pub(crate) fn note_tree_ids(&self, next: u64) {
        self.tree_ids.fetch_max(next, std::sync::atomic::Ordering::Relaxed);
    }

    /// Release the locks if `close` has finished and no read or write transaction is alive (a
    /// new `Env` may then open the database and overwrite pages; nothing of this one reads them
    /// any more). Returns whether the locks are released. Before `close_done` it reads one
    /// atomic: every read transaction ends here.
    pub(crate) fn release_lock_if_idle(&self) -> bool {
        if !self.close_done.load(Ordering::Acquire) {
            return false;
        }
        self.release_lock_if_idle_in(&self.readers.all())
    }

    /// `release_lock_if_idle` with every lane held (`close`, which sets `close_done` under them).
    pub(crate) fn release_lock_if_idle_in(&self, all: &AllLanes<'_>) -> bool {
        let mut lock = self.lock.lock();
        if lock.is_some() && all.live() == 0 && all.write_txns() == 0 {
            *lock = None;
        }
        lock.is_none()
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::ReadOnly(self.dir.clone()));
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(m) = self.poisoned.lock().as_ref() {
            return Err(Error::Poisoned(m.clone()));
        }
        Ok(())
    }

    /// Refuse writes from now on: an fsync or write failed and the state on disk is unknown.
    pub(crate) fn poison(&self, e: &Error) {
        let mut p = self.poisoned.lock();
        if p.is_none() {
            *p = Some(e.to_string());
        }
    }

    /// Make `c` the state new snapshots begin from (`Readers::publish_committed`).
    pub(crate) fn publish_committed(&self, c: Committed) {
        self.readers.publish_committed(c);
    }

    /// The last committed state.
    pub(crate) fn committed(&self) -> Committed {
        self.readers.committed()
    }

    /// What readers keep from being retired, counted against `Options::max_pinned_bytes`: page
    /// versions in memory plus the journal records not yet flushed (their files stay on disk).
    /// Not the retired versions snapshots may still be reading in place (page_table invariant
    /// 5, `Stats::retired_kept_bytes`): a flush cannot free those, so counting them would refuse
    /// writers while any snapshot older than the flush lives; they are at most what the table
    /// held when the oldest such snapshot began, itself under the cap.
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.table.bytes() + Counters::get(&self.counters.journal_unflushed_bytes)
    }

    /// The age of the oldest live read transaction, if any.
    pub(crate) fn oldest_reader_age(&self) -> Option<Duration> {
        self.readers.oldest_age(self.opts.clock.now())
    }

    /// Whether enough is unflushed to flush now: journal bytes written since the last flush past
    /// the threshold (bounds recovery time), or page versions held in memory past half the cap.
    pub(crate) fn flush_due(&self) -> bool {
        let written = Counters::get(&self.counters.journal_bytes_stored);
        written.saturating_sub(self.journal_bytes_at_flush.load(Ordering::Relaxed)) >= self.opts.flush_threshold_bytes
            || self.table.bytes() >= self.opts.max_pinned_bytes / 2
    }

    /// Whether the data file should grow ahead of the writer (`flusher::grow_ahead`): the
    /// high-water mark `high` is past 7/8 of the file, and a commit has moved it since the
    /// open. The mark sits past 7/8 whenever a database is opened (`close` trims the file to
    /// it); growing there cost a database opened only to be read two growth steps of
    /// `fallocate` and `fsync`, and two replacements of the mapping under its readers, each
    /// faulting every page in again (a third of the page faults of `freedb bench`'s queries on a
    /// reopened 2.3 GB database).
    pub(crate) fn grow_due(&self, high: u64) -> bool {
        high > self.opened_next_page && high > self.data.len() / self.page_size as u64 / 8 * 7
    }

    /// Wake the background flusher to grow the data file, without asking for a flush: once per
    /// file length (a wake-up is a `futex` call; `commit-syscalls` counted one per commit).
    pub(crate) fn nudge_flusher_to_grow(&self) {
        let len = self.data.len();
        if self.grow_nudged_at.swap(len, Ordering::Relaxed) != len {
            let _c = self.flusher_ctl.lock();
            self.flusher_cv.notify_all();
        }
    }

    /// Wake the background flusher to make the journal durable, without asking for a flush
    /// (`Journal::sync_ahead_due`): once until it has done so.
    pub(crate) fn nudge_flusher_to_sync(&self) {
        if !self.sync_nudged.swap(true, Ordering::AcqRel) {
            let mut c = self.flusher_ctl.lock();
            c.sync_journal = true;
            self.flusher_cv.notify_all();
        }
    }

    /// Wake the background flusher.
    pub(crate) fn wake_flusher(&self) {
        let mut c = self.flusher_ctl.lock();
        c.requested = true;
        self.flusher_cv.notify_all();
    }
}
