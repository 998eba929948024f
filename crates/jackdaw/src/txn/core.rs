//! The state shared by an environment's transactions, flusher and handles.

use super::alloc::AllocSummary;
use super::page_table::PageTable;
use crate::data::{DataFile, Header, MapState};
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
    pub next_page: PageNo,
    /// Journal position just after this transaction's record (set once it is written).
    pub journal_end: Option<JournalPos>,
    /// Length of its journal record (set once it is written).
    pub journal_bytes: u64,
}

/// The committed state readers and the writer start from.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Committed {
    pub txid: TxId,
    pub next_page: PageNo,
}

/// How many live snapshots read each txid: the largest id apart (`newest`), every smaller one
/// in `older`. Invariants: no zero count; `newest` is `None` only when `older` is empty; every key
/// of `older` is below `newest`'s id. Snapshots begin at the last committed id, the largest, so
/// the usual add and remove (one reader at a time: a read transaction per operation) compare one
/// id and never search the map (`examples/rndread 200000 100000 txn`, callgrind: ~55
/// instructions less a transaction).
#[derive(Default)]
struct TxidCounts {
    newest: Option<(TxId, usize)>,
    older: std::collections::BTreeMap<TxId, usize>,
}

impl TxidCounts {
    /// Count one more snapshot of `t`; true when `t` had none.
    fn add(&mut self, t: TxId) -> bool {
        match &mut self.newest {
            Some((n, c)) if *n == t => {
                *c += 1;
                false
            }
            Some((n, _)) if *n > t => {
                let c = self.older.entry(t).or_default();
                *c += 1;
                *c == 1
            }
            _ => {
                if let Some((n, c)) = self.newest.replace((t, 1)) {
                    self.older.insert(n, c);
                }
                true
            }
        }
    }
    /// Count one snapshot of `t` fewer; true when `t` has none left.
    fn remove(&mut self, t: TxId) -> bool {
        if let Some((n, c)) = &mut self.newest {
            if *n == t {
                *c -= 1;
                if *c > 0 {
                    return false;
                }
                self.newest = self.older.pop_last();
                return true;
            }
        }
        if let std::collections::btree_map::Entry::Occupied(mut e) = self.older.entry(t) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
                return true;
            }
        }
        false
    }
    /// The counted ids, in increasing order.
    fn ids(&self) -> impl Iterator<Item = TxId> + '_ {
        self.older.keys().copied().chain(self.newest.map(|(t, _)| t))
    }
}

/// Live readers: slot -> (snapshot txid, start time), and how many live snapshots read each
/// txid. Invariant: `by_txid` counts `t` as many times as there are `Some((t, _))` slots.
/// A commit needs only the distinct snapshot ids (`txids`), so its work does not grow with the
/// number of readers (faults issue §6: with 1,000,000 open snapshots a commit collected and sorted
/// every slot, 5.7 ms).
#[derive(Default)]
pub(crate) struct Readers {
    pub slots: Vec<Option<(TxId, Duration)>>,
    free: Vec<usize>,
    by_txid: TxidCounts,
    /// `by_txid`'s ids as a list, built when a commit asks and kept until the set of distinct
    /// ids changes, so that commits with many open snapshots do not copy them each time.
    ids: Option<Arc<[TxId]>>,
    /// Live write transactions (0 or 1): like readers, they keep a closed environment's locks.
    pub write_txns: usize,
    /// The last transaction visible to new snapshots (its record is written), set by
    /// `Prepared::finish` (`Core::publish_committed`). Kept here, under the lock a snapshot takes
    /// to register, so that a snapshot begins with this one lock.
    pub(crate) committed: Committed,
    /// The data file's map as of `DataFile::map_generation` (the number kept beside it): a
    /// snapshot takes it here, under the lock it holds anyway, not through the map's `RwLock`
    /// (`current_map`). Cleared when `close` cuts the file, so no longer mapping outlives it.
    pub(crate) map: Option<(u64, Arc<MapState>)>,
    /// What the layers above learned about one committed state (`txid`), shared by the
    /// snapshots of that state: the API layer keeps the tree descriptors it resolved there, so
    /// that a read transaction does not look a tree up in the catalog again when the one before
    /// it, at the same txid, did. Opaque here; immutable once published (a state's content never
    /// changes), replaced by a newer or larger one.
    memo: Option<(TxId, Arc<dyn std::any::Any + Send + Sync>)>,
}

/// A state's shared memo (see `Readers::memo`).
pub(crate) type Memo = Arc<dyn std::any::Any + Send + Sync>;

impl Readers {
    /// The memo of state `txid`, if one was published.
    pub(crate) fn memo(&self, txid: TxId) -> Option<Memo> {
        self.memo.as_ref().filter(|(t, _)| *t == txid).map(|(_, m)| m.clone())
    }
    /// Publish `m` as the memo of state `txid`, unless one of a newer state is there.
    pub(crate) fn set_memo(&mut self, txid: TxId, m: Memo) {
        if self.memo.as_ref().is_none_or(|(t, _)| *t <= txid) {
            self.memo = Some((txid, m));
        }
    }

    /// Give state `to` the memo `next`, made from state `from`'s memo: only if `from`'s is still
    /// the one held (no newer state has one).
    fn hand_on_memo(&mut self, from: TxId, to: TxId, next: Memo) {
        if self.memo.as_ref().is_some_and(|(t, _)| *t == from) && from < to {
            self.memo = Some((to, next));
        }
    }

    /// The map a snapshot beginning now reads through: the one kept while the file was not
    /// mapped anew since, else the file's current map (kept for the next). The generation is
    /// read before the map is taken, so the map kept is at least as new as its number says.
    pub(crate) fn current_map(&mut self, data: &DataFile) -> Arc<MapState> {
        let g = data.map_generation();
        if let Some((kept, m)) = &self.map {
            if *kept == g {
                return m.clone();
            }
        }
        let m = data.map();
        self.map = Some((g, m.clone()));
        m
    }

    pub(crate) fn add(&mut self, txid: TxId, now: Duration) -> usize {
        if self.by_txid.add(txid) {
            self.ids = None;
        }
        if let Some(i) = self.free.pop() {
            self.slots[i] = Some((txid, now));
            i
        } else {
            self.slots.push(Some((txid, now)));
            self.slots.len() - 1
        }
    }
    pub(crate) fn remove(&mut self, i: usize) {
        let Some(Some((txid, _))) = self.slots.get_mut(i).map(Option::take) else { return };
        self.free.push(i);
        if self.by_txid.remove(txid) {
            self.ids = None;
        }
    }
    /// The distinct snapshot ids of the live readers, in increasing order.
    #[cfg(test)]
    pub(crate) fn txids(&self) -> impl Iterator<Item = TxId> + '_ {
        self.by_txid.ids()
    }
    /// The distinct snapshot ids of the live readers, in increasing order, shared (rebuilt only
    /// after the set changed).
    pub(crate) fn txid_list(&mut self) -> Arc<[TxId]> {
        if let Some(ids) = &self.ids {
            return ids.clone();
        }
        let ids: Arc<[TxId]> = self.by_txid.ids().collect();
        self.ids = Some(ids.clone());
        ids
    }
    /// Live read transactions.
    pub(crate) fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
    pub(crate) fn oldest(&self) -> Option<TxId> {
        self.by_txid.ids().next()
    }
}

/// Flusher control (under `Core::flusher_ctl`).
#[derive(Default)]
pub(crate) struct FlusherCtl {
    pub requested: bool,
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
    pub(super) readers: Mutex<Readers>,
    /// The single-writer lock.
    pub(super) writer: crate::sync::WriterLock,
    pub(super) alloc: Mutex<AllocSummary>,
    /// Held by a flush from start to end; guards the last written header.
    pub(super) flush_state: Mutex<Header>,
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
            readers: Mutex::new(Readers { committed: o.committed, ..Readers::default() }),
            writer: crate::sync::WriterLock::default(),
            alloc: Mutex::new(o.alloc),
            flush_state: Mutex::new(h),
            flusher_ctl: Mutex::new(FlusherCtl::default()),
            flusher_cv: Condvar::new(),
            counters: o.counters,
            journal_bytes_at_flush: crate::sync::AtomicU64::new(0),
            grow_nudged_at: crate::sync::AtomicU64::new(0),
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
    /// ~690 instructions). `next` runs outside the readers lock (every read transaction takes
    /// it twice).
    pub(crate) fn hand_on_read_memo(&self, from: TxId, to: TxId, next: impl FnOnce(&Memo) -> Option<Memo>) {
        let Some(m) = self.readers.lock().memo(from) else { return };
        if let Some(n) = next(&m) {
            self.readers.lock().hand_on_memo(from, to, n);
        }
    }

    /// Tree ids below `next` have been handed out (a write transaction's, committed or not).
    pub(crate) fn note_tree_ids(&self, next: u64) {
        self.tree_ids.fetch_max(next, std::sync::atomic::Ordering::Relaxed);
    }

    /// With `readers` held (so no transaction can begin or end meanwhile): release the locks if
    /// `close` has finished and no read or write transaction is alive (a new `Env` may then open
    /// the database and overwrite pages; nothing of this one reads them any more). Returns whether
    /// the locks are released.
    pub(crate) fn release_lock_if_idle(&self, readers: &Readers) -> bool {
        // Only `close` sets `close_done`, and only this function releases the locks, after it:
        // every read transaction ends here, and needs no second lock before then.
        if !self.close_done.load(Ordering::Acquire) {
            return false;
        }
        let mut lock = self.lock.lock();
        if lock.is_some() && readers.live() == 0 && readers.write_txns == 0 {
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

    /// Make `c` the state new snapshots begin from (`Readers::committed`).
    pub(crate) fn publish_committed(&self, c: Committed) {
        self.readers.lock().committed = c;
    }

    /// The last committed state (takes the readers lock: not for a thread that holds it, which
    /// reads `Readers::committed`).
    pub(crate) fn committed(&self) -> Committed {
        self.readers.lock().committed
    }

    /// What readers keep from being retired, counted against `Options::max_pinned_bytes`: page
    /// versions in memory plus the journal records not yet flushed (their files stay on disk).
    pub(crate) fn pinned_bytes(&self) -> u64 {
        self.table.bytes() + Counters::get(&self.counters.journal_unflushed_bytes)
    }

    /// The age of the oldest live read transaction, if any.
    pub(crate) fn oldest_reader_age(&self) -> Option<Duration> {
        let now = self.opts.clock.now();
        let r = self.readers.lock();
        let oldest = r.oldest()?;
        r.slots.iter().flatten().filter(|(t, _)| *t == oldest).map(|(_, start)| now.saturating_sub(*start)).max()
    }

    /// Whether enough is unflushed to flush now: journal bytes written since the last flush past
    /// the threshold (bounds recovery time), or page versions held in memory past half the cap.
    pub(crate) fn flush_due(&self) -> bool {
        let written = Counters::get(&self.counters.journal_bytes_stored);
        written.saturating_sub(self.journal_bytes_at_flush.load(Ordering::Relaxed)) >= self.opts.flush_threshold_bytes
            || self.table.bytes() >= self.opts.max_pinned_bytes / 2
    }

    /// Whether the data file should grow ahead of the writer (`flusher::grow_ahead`): the
    /// high-water mark `high` is past 7/8 of the file.
    pub(crate) fn grow_due(&self, high: u64) -> bool {
        high > self.data.len() / self.page_size as u64 / 8 * 7
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

    /// Wake the background flusher.
    pub(crate) fn wake_flusher(&self) {
        let mut c = self.flusher_ctl.lock();
        c.requested = true;
        self.flusher_cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::Readers;
    use crate::TxId;
    use std::time::Duration;

    /// `by_txid` mirrors the slots through any order of adds and removes: `txids` lists each
    /// live snapshot id once, in order, and `oldest` is the smallest.
    #[test]
    fn reader_counts_follow_the_slots() {
        let mut rng = crate::test_rng(0x5eed_0006);
        let mut r = Readers::default();
        let mut live: Vec<(usize, TxId)> = Vec::new();
        for _ in 0..20_000 {
            if live.is_empty() || !rng().is_multiple_of(3) {
                let t = TxId::new(rng() % 50);
                live.push((r.add(t, Duration::ZERO), t));
            } else {
                let (slot, _) = live.swap_remove((rng() % live.len() as u64) as usize);
                r.remove(slot);
            }
            let mut want: Vec<TxId> = live.iter().map(|(_, t)| *t).collect();
            want.sort_unstable();
            want.dedup();
            assert_eq!(r.txids().collect::<Vec<_>>(), want);
            assert_eq!(&*r.txid_list(), want.as_slice());
            assert_eq!(r.oldest(), want.first().copied());
            assert_eq!(r.live(), live.len());
        }
        // Removing a slot twice changes nothing.
        let s = r.add(TxId::new(7), Duration::ZERO);
        r.remove(s);
        let before: Vec<TxId> = r.txids().collect();
        r.remove(s);
        assert_eq!(r.txids().collect::<Vec<_>>(), before);
    }
}
