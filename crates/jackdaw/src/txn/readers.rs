//! Live readers: which committed states the snapshots read, kept so that beginning and ending a
//! read transaction writes no memory another thread's read transaction writes.
//!
//! Readers are registered in **lanes**, each a mutex on cache lines of its own; a thread always
//! uses the same lane (`crate::sync::thread_seed`), so read transactions on different threads
//! take different locks and touch different lines (one registry mutex, with the map's and the
//! memo's reference counts, made YCSB C at two threads 0.80× LMDB while one thread was even:
//! every begin and end moved ~10 lines between the cores). What a snapshot begins from is read
//! without writing: the committed `(txid, next_page)` from a double buffer (`CommittedCell`),
//! the data file's map generation and the memo's generation (atomics). A lane keeps the epoch
//! its last snapshot began from (what the snapshot layer made of that state, map and memo:
//! `read::Epoch`, opaque here) and hands the same `Arc` to the next while none of the three
//! moved: the reference count written is the lane's own.
//!
//! Invariants (relied on by the flusher and by `prepare`, page_table invariant 4):
//! 1. A snapshot's txid is counted in its lane (`by_txid`) from its registration, made under
//!    the lane's lock together with the read of `committed`, until its end.
//! 2. Whoever needs "every txid a snapshot may read" reads `committed` **first**, then locks the
//!    lanes one at a time (`snapshot_ids`): a reader missed in a lane registered after that
//!    lane was read, so it read `committed` later, and `committed` only grows. The answer is the
//!    ids seen plus that first `committed`.
//! 3. What must be decided against all readers at once (the flusher's target, which registers
//!    itself; releasing the locks after `close`; the close's trim) holds every lane (`all`),
//!    taken in index order, the only order in which more than one is held.
//! 4. `committed` is written only by `Prepared::finish`, under the journal mutex (one writer).

use crate::data::{DataFile, MapState};
use crate::sync::{AtomicU64, Mutex, MutexGuard};
use crate::{Error, PageNo, Result, TxId};
use std::any::Any;
use std::sync::atomic::Ordering::{Acquire, SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// A value alone on its cache lines (128 bytes: adjacent-line prefetch pairs lines).
#[repr(align(128))]
#[derive(Default)]
struct Padded<T>(T);

/// How many snapshots read each txid: the largest id apart (`newest`), every smaller one in
/// `older`. Invariants: no zero count; `newest` is `None` only when `older` is empty; every key
/// of `older` is below `newest`'s id. Snapshots begin at the last committed id, the largest, so
/// the usual add and remove compare one id and never search the map (`examples/rndread 200000
/// 100000 txn`, callgrind: ~55 instructions less a transaction).
#[derive(Default)]
struct TxidCounts {
    newest: Option<(TxId, usize)>,
    older: std::collections::BTreeMap<TxId, usize>,
}

impl TxidCounts {
    /// Count one more snapshot of `t`.
    fn add(&mut self, t: TxId) {
        match &mut self.newest {
            Some((n, c)) if *n == t => *c += 1,
            Some((n, _)) if *n > t => *self.older.entry(t).or_default() += 1,
            _ => {
                if let Some((n, c)) = self.newest.replace((t, 1)) {
                    self.older.insert(n, c);
                }
            }
        }
    }
    /// Count one snapshot of `t` fewer.
    fn remove(&mut self, t: TxId) {
        if let Some((n, c)) = &mut self.newest {
            if *n == t {
                *c -= 1;
                if *c == 0 {
                    self.newest = self.older.pop_last();
                }
                return;
            }
        }
        if let std::collections::btree_map::Entry::Occupied(mut e) = self.older.entry(t) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
    }
    /// The counted ids, in increasing order.
    fn ids(&self) -> impl Iterator<Item = TxId> + '_ {
        self.older.keys().copied().chain(self.newest.map(|(t, _)| t))
    }
}

/// The committed state readers and the writer start from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Committed {
    pub txid: TxId,
    pub next_page: PageNo,
}

/// A state's shared memo (see `Readers::memo`).
pub(crate) type Memo = Arc<dyn Any + Send + Sync>;

/// What a lane's epoch was made from: it serves while all four are current.
#[derive(Clone, Copy, PartialEq, Eq)]
struct EpochKey {
    committed: Committed,
    map_gen: u64,
    memo_gen: u64,
    /// The page table's era generation (page_table invariant 5): an epoch made with an older
    /// era keeps the versions retired since, so new snapshots do not begin from it.
    era_gen: u64,
}

/// One lane's readers: slot -> (snapshot txid, start time), the count per txid, the write
/// transactions begun on its threads, the epoch its last snapshot began from. Invariant:
/// `by_txid` counts `t` as many times as there are `Some((t, _))` slots.
#[derive(Default)]
struct Lane {
    slots: Vec<Option<(TxId, Duration)>>,
    free: Vec<usize>,
    by_txid: TxidCounts,
    write_txns: usize,
    /// The epoch its last snapshot began from, and what it was made of.
    epoch: Option<(EpochKey, Arc<dyn Any + Send + Sync>)>,
}

impl Lane {
    #[inline]
    fn add(&mut self, txid: TxId, now: Duration) -> usize {
        self.by_txid.add(txid);
        if let Some(i) = self.free.pop() {
            self.slots[i] = Some((txid, now));
            i
        } else {
            self.slots.push(Some((txid, now)));
            self.slots.len() - 1
        }
    }
    #[inline]
    fn remove(&mut self, i: usize) {
        let Some(Some((txid, _))) = self.slots.get_mut(i).map(Option::take) else { return };
        self.free.push(i);
        self.by_txid.remove(txid);
    }
    fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

/// The committed `(txid, next_page)`, read without writing: publication `g` goes to slot
/// `g % 2`, whose version is odd while it is written and `2g` once written, then `gen` becomes
/// `g`. A reader of `gen = g` that finds its slot changing has seen the writer finish
/// publication `g + 1` and begin `g + 2`: it retries, and each retry follows a publication
/// completed (no reader waits on a writer halfway, as it would on a sequence lock).
#[derive(Default)]
struct CommittedCell {
    gen: AtomicU64,
    slots: [CommittedSlot; 2],
    /// Bumped whenever the memo changes (so a lane's epoch knows its memo is stale).
    memo_gen: AtomicU64,
}

#[derive(Default)]
struct CommittedSlot {
    version: AtomicU64,
    txid: AtomicU64,
    next_page: AtomicU64,
}

/// Where a snapshot (or the flusher's target) is registered.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seat {
    lane: usize,
    slot: usize,
}

pub(crate) struct Readers {
    lanes: Box<[Padded<Mutex<Lane>>]>,
    committed: Padded<CommittedCell>,
    /// What the layers above learned about one committed state (`txid`), shared by the
    /// snapshots of that state: the API layer keeps the tree descriptors it resolved there, so
    /// that a read transaction does not look a tree up in the catalog again when the one before
    /// it, at the same txid, did. Opaque here; immutable once published (a state's content never
    /// changes), replaced by a newer or larger one.
    memo: Mutex<Option<(TxId, Memo)>>,
}

/// How many lanes: two per processor (threads that share a lane share its lock) rounded up to
/// a power of two (a thread's lane is a mask away), at least 2, at most 64.
fn lane_count() -> usize {
    if cfg!(feature = "shuttle") {
        return 2;
    }
    std::thread::available_parallelism().map_or(8, |n| n.get() * 2).clamp(2, 64).next_power_of_two()
}

impl Readers {
    pub(crate) fn new(c: Committed) -> Readers {
        let r = Readers {
            lanes: (0..lane_count()).map(|_| Padded::default()).collect(),
            committed: Padded::default(),
            memo: Mutex::new(None),
        };
        r.publish_committed(c);
        r
    }

    fn my_lane(&self) -> usize {
        crate::sync::thread_seed() & (self.lanes.len() - 1)
    }

    /// The last committed state (invariant 4: a snapshot of `publish_committed`).
    pub(crate) fn committed(&self) -> Committed {
        let c = &self.committed.0;
        loop {
            let g = c.gen.load(SeqCst);
            let s = &c.slots[(g % 2) as usize];
            let v = s.version.load(SeqCst);
            let (t, n) = (s.txid.load(SeqCst), s.next_page.load(SeqCst));
            if v == 2 * g && s.version.load(SeqCst) == v {
                return Committed { txid: TxId::new(t), next_page: PageNo::new(n) };
            }
        }
    }

    /// Make `c` the state new snapshots begin from (callers are serialized: invariant 4).
    pub(crate) fn publish_committed(&self, c: Committed) {
        let cell = &self.committed.0;
        let g = cell.gen.load(SeqCst) + 1;
        let s = &cell.slots[(g % 2) as usize];
        s.version.store(2 * g - 1, SeqCst);
        s.txid.store(c.txid.get(), SeqCst);
        s.next_page.store(c.next_page.get(), SeqCst);
        s.version.store(2 * g, SeqCst);
        cell.gen.store(g, SeqCst);
    }

    /// Register a snapshot of the committed state on this thread's lane: its epoch (the one the
    /// lane keeps if still current, else `make(committed, the data file's map, the memo)`) and
    /// its seat. With `refuse_closed`, `Closed` once `closed` is set (read under the lane's lock,
    /// so that `close`, which sets it before taking every lane, sees each snapshot that began).
    /// An epoch made after `closed` is set is not kept by the lane.
    pub(crate) fn begin<E: Any + Send + Sync>(
        &self,
        data: &DataFile,
        era_gen: u64,
        closed: &crate::sync::AtomicBool,
        refuse_closed: bool,
        now: Duration,
        make: impl FnOnce(Committed, Arc<MapState>, Option<Memo>) -> E,
    ) -> Result<(Arc<E>, Seat)> {
        let lane = self.my_lane();
        let mut l = self.lanes[lane].0.lock();
        let is_closed = closed.load(Acquire);
        if refuse_closed && is_closed {
            return Err(Error::Closed);
        }
        let committed = self.committed();
        // Read after `committed` and before the map and the memo are taken: what is taken is at
        // least this new, and the map covers the committed pages.
        let key = EpochKey {
            committed,
            map_gen: data.map_generation(),
            memo_gen: self.committed.0.memo_gen.load(Acquire),
            era_gen,
        };
        let kept = l.epoch.as_ref().filter(|(k, _)| *k == key).and_then(|(_, e)| e.clone().downcast::<E>().ok());
        let epoch = match kept {
            Some(e) => e,
            None => {
                let fresh = make(committed, data.map(), self.memo(committed.txid));
                // The lane's old epoch, rewritten in place when no snapshot holds it any more
                // (the common case: a reader after each commit): an epoch is a block aligned
                // to 128 bytes, which the allocator makes and frees at ~800 instructions each
                // way.
                let old = if is_closed { None } else { l.epoch.take() };
                let e = match old.map(|(_, e)| e.downcast::<E>()) {
                    Some(Ok(mut e)) => match Arc::get_mut(&mut e) {
                        Some(slot) => {
                            *slot = fresh;
                            e
                        }
                        None => Arc::new(fresh),
                    },
                    _ => Arc::new(fresh),
                };
                if !is_closed {
                    l.epoch = Some((key, e.clone()));
                }
                e
            }
        };
        let slot = l.add(committed.txid, now);
        Ok((epoch, Seat { lane, slot }))
    }

    /// Unregister a snapshot (or the flusher's target).
    pub(crate) fn end(&self, seat: Seat) {
        self.lanes[seat.lane].0.lock().remove(seat.slot);
    }

    /// Count a write transaction begun on this thread; returns its lane, for `end_write`.
    pub(crate) fn begin_write(&self) -> usize {
        let lane = self.my_lane();
        self.lanes[lane].0.lock().write_txns += 1;
        lane
    }

    pub(crate) fn end_write(&self, lane: usize) {
        self.lanes[lane].0.lock().write_txns -= 1;
    }

    /// The last committed txid and every txid a live snapshot reads, increasing and distinct
    /// (invariant 2): what a commit's page versions must still serve.
    pub(crate) fn snapshot_ids(&self) -> (TxId, Vec<TxId>) {
        let visible = self.committed().txid;
        let mut ids = Vec::new();
        for l in self.lanes.iter() {
            ids.extend(l.0.lock().by_txid.ids());
        }
        ids.sort_unstable();
        ids.dedup();
        (visible, ids)
    }

    /// Every lane, held (invariant 3).
    pub(crate) fn all(&self) -> AllLanes<'_> {
        AllLanes { lanes: self.lanes.iter().map(|l| l.0.lock()).collect() }
    }

    /// Every live reader's (txid, start time), lane by lane (not one instant: for `stats`).
    pub(crate) fn list(&self) -> Vec<(TxId, Duration)> {
        let mut v = Vec::new();
        for l in self.lanes.iter() {
            v.extend(l.0.lock().slots.iter().flatten().copied());
        }
        v
    }

    /// The age at `now` of the oldest live reader (of the smallest txid, the longest alive).
    pub(crate) fn oldest_age(&self, now: Duration) -> Option<Duration> {
        let all = self.list();
        let oldest = all.iter().map(|(t, _)| *t).min()?;
        all.iter().filter(|(t, _)| *t == oldest).map(|(_, start)| now.saturating_sub(*start)).max()
    }

    /// The memo of state `txid`, if one was published.
    pub(crate) fn memo(&self, txid: TxId) -> Option<Memo> {
        self.memo.lock().as_ref().filter(|(t, _)| *t == txid).map(|(_, m)| m.clone())
    }

    fn replace_memo(&self, m: &mut Option<(TxId, Memo)>, txid: TxId, next: Memo) {
        *m = Some((txid, next));
        self.committed.0.memo_gen.fetch_add(1, SeqCst);
    }

    /// Publish `m` as the memo of state `txid`, unless one of a newer state is there.
    pub(crate) fn set_memo(&self, txid: TxId, m: Memo) {
        let mut cur = self.memo.lock();
        if cur.as_ref().is_none_or(|(t, _)| *t <= txid) {
            self.replace_memo(&mut cur, txid, m);
        }
    }

    /// Give state `to` the memo `next`, made from state `from`'s memo: only if `from`'s is still
    /// the one held (no newer state has one).
    pub(crate) fn hand_on_memo(&self, from: TxId, to: TxId, next: Memo) {
        let mut cur = self.memo.lock();
        if cur.as_ref().is_some_and(|(t, _)| *t == from) && from < to {
            self.replace_memo(&mut cur, to, next);
        }
    }
}

/// Every lane of a [`Readers`], locked in index order (invariant 3).
pub(crate) struct AllLanes<'a> {
    lanes: Vec<MutexGuard<'a, Lane>>,
}

impl AllLanes<'_> {
    /// Live snapshots (and flush targets).
    pub(crate) fn live(&self) -> usize {
        self.lanes.iter().map(|l| l.live()).sum()
    }
    /// Live write transactions.
    pub(crate) fn write_txns(&self) -> usize {
        self.lanes.iter().map(|l| l.write_txns).sum()
    }
    /// The smallest txid a live snapshot reads.
    pub(crate) fn oldest(&self) -> Option<TxId> {
        self.lanes.iter().filter_map(|l| l.by_txid.ids().next()).min()
    }
    /// Register a reader of `txid` (the flusher's target: decided with every lane held).
    pub(crate) fn add(&mut self, txid: TxId, now: Duration) -> Seat {
        Seat { lane: 0, slot: self.lanes[0].add(txid, now) }
    }
    /// Forget the epochs the lanes keep (their maps of the data file: `close` cuts the file).
    pub(crate) fn clear_epochs(&mut self) {
        for l in self.lanes.iter_mut() {
            l.epoch = None;
        }
    }

    /// Forget the epochs made with a page-table era older than `era_gen`: a lane no snapshot
    /// began on since a flush would otherwise keep the versions that flush retired.
    pub(crate) fn clear_epochs_before(&mut self, era_gen: u64) {
        for l in self.lanes.iter_mut() {
            if l.epoch.as_ref().is_some_and(|(k, _)| k.era_gen < era_gen) {
                l.epoch = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Committed, Lane, Readers};
    use crate::{PageNo, TxId};
    use std::time::Duration;

    /// `committed` read on two threads while a third publishes 200,000 states, each with
    /// `next_page = 3 × txid + 1`: every read is one whole published state (never one field of
    /// one and the other of another), and a thread's reads never go back.
    #[cfg(not(feature = "shuttle"))]
    #[test]
    fn committed_reads_are_whole_states_in_order() {
        let state = |t: u64| Committed { txid: TxId::new(t), next_page: PageNo::new(3 * t + 1) };
        let r = Readers::new(state(0));
        let last = 200_000u64;
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let (mut prev, mut reads) = (0u64, 0u64);
                    loop {
                        let c = r.committed();
                        let t = c.txid.get();
                        assert_eq!(c.next_page.get(), 3 * t + 1, "a torn read: txid {t}, next_page {:?}", c.next_page);
                        assert!(t >= prev, "went back from {prev} to {t}");
                        prev = t;
                        reads += 1;
                        if t == last {
                            break reads;
                        }
                        assert!(reads < 1 << 32, "the last state never became readable (stuck at {t})");
                    }
                });
            }
            for t in 1..=last {
                r.publish_committed(state(t));
            }
        });
        assert_eq!(r.committed(), state(last));
    }

    /// `by_txid` mirrors the slots through any order of adds and removes: it lists each live
    /// snapshot id once, in order, and the live count is right.
    #[test]
    fn reader_counts_follow_the_slots() {
        let mut rng = crate::test_rng(0x5eed_0006);
        let mut r = Lane::default();
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
            assert_eq!(r.by_txid.ids().collect::<Vec<_>>(), want);
            assert_eq!(r.live(), live.len());
        }
        // Removing a slot twice changes nothing.
        let s = r.add(TxId::new(7), Duration::ZERO);
        r.remove(s);
        let before: Vec<TxId> = r.by_txid.ids().collect();
        r.remove(s);
        assert_eq!(r.by_txid.ids().collect::<Vec<_>>(), before);
    }
}
